/**
 * The shape of what {@link renderHtmlReport} and the chart printers draw, checked before drawing
 * so that a caller's mistake is an {@link InputError} naming the JSON path, never a TypeError
 * from deep inside the SVG code. Objects are loose (extra keys are fine); the values the drawing
 * reads are typed.
 */
import { z } from 'zod';
import { PLAN_LIMITS } from '../core/validate.js';

const id = z.string();
const layer = z.int().min(0).max(PLAN_LIMITS.layers);
const stage = z.looseObject({ nodeId: id, layerStart: layer, layerEnd: layer });
const range = z.looseObject({ layerStart: layer, layerEnd: layer });
const route = z.looseObject({ modelId: id, pipelineId: id, stages: z.array(stage), cost: z.number(), hops: z.number(), degraded: z.boolean() });
const recovery = z.looseObject({
  modelId: id,
  strategy: z.enum(['unaffected', 'copy', 'splice', 'degraded']),
  degraded: z.boolean(),
  route,
  from: route,
  replaced: z.array(range.extend({ from: id, to: id })),
  missingLayers: z.array(range),
});
const profile = z.looseObject({ id, memoryGb: z.number(), score: z.number().optional(), latencyMs: z.number().optional() });
const plan = z.looseObject({
  models: z.array(z.looseObject({ id, layers: z.int().min(1).max(PLAN_LIMITS.layers) })),
  pipelines: z.array(z.looseObject({ id, modelId: id, stages: z.array(stage) })),
});
const telemetry = z.looseObject({ alive: z.boolean(), latencyMs: z.number().optional(), load: z.number().optional(), score: z.number().optional(), suspect: z.boolean().optional() });
// Not z.record: that would drop a node named "__proto__"; every own value is checked instead.
const nodes = z.custom<Record<string, unknown>>(
  (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((t) => telemetry.safeParse(t).success),
  'must be an object of telemetry { alive, latencyMs?, load?, score? } by node id',
);
const base = { status: z.string(), route: route.nullable(), routeError: z.looseObject({ code: z.string(), message: z.string() }).optional() };
const step = z.discriminatedUnion('step', [
  z.looseObject({ step: z.literal('start'), ...base, pipelines: z.array(id) }),
  z.looseObject({ step: z.literal('failover'), ...base, killed: id, recovery: recovery.nullable(), recoveries: z.array(recovery), unrecoverable: z.array(id) }),
  z.looseObject({ step: z.literal('growth'), ...base, added: profile, role: z.string(), modelId: id.nullable(), pipelines: z.array(id) }),
  z.looseObject({ step: z.literal('revive'), ...base, revived: id }),
  z.looseObject({ step: z.literal('retire'), ...base, retired: id, relocated: z.array(range.extend({ pipelineId: id, from: id, to: id })), dropped: z.array(id) }),
  z.looseObject({
    step: z.literal('rebalance'),
    ...base,
    moves: z.array(z.looseObject({ id, kind: z.string(), modelId: id, removes: z.array(id), adds: z.array(z.looseObject({ id, nodes: z.array(id) })), layersMoved: z.number(), loadSeconds: z.number(), gain: z.number() })),
    layersMoved: z.number(),
    before: z.number(),
    after: z.number(),
  }),
]);

/** A `swarm-sim` document, as far as the report reads it. */
export const swarmSimReportSchema = z.looseObject({
  topology: z.string().nullable(),
  seed: z.number().nullable(),
  model: id,
  tokens: z.number(),
  kill: id,
  steps: z.array(step),
  plan,
  planValid: z.boolean(),
  planIssues: z.array(z.string()),
});

/** The argument of `renderHtmlReport`. */
export const htmlReportInputSchema = z.looseObject({
  report: swarmSimReportSchema,
  frames: z.array(z.looseObject({ plan, nodes })).optional(),
  profiles: z.array(profile).optional(),
  title: z.string().optional(),
});

/** A machine chart as `machineChart` returns it. */
export const machineChartSchema = z.looseObject({
  id: z.string(),
  states: z.array(z.looseObject({ id: z.string(), path: z.array(z.string()), type: z.string(), initial: z.string().nullable(), entry: z.array(z.string()), exit: z.array(z.string()) })),
  transitions: z.array(
    z.looseObject({ source: z.string(), event: z.string().nullable(), guard: z.string().nullable(), targets: z.array(z.string()), actions: z.array(z.string()) }),
  ),
});
