import { assign, setup } from 'xstate';

/** One telemetry sample; every field optional, every present field finite and >= 0. */
export interface NodeSample {
  readonly load?: number;
  readonly latencyMs?: number;
  readonly score?: number;
}

/** A node actor's context: its EWMAs (measured values only) and how many samples fed them. */
export interface NodeContext {
  readonly id: string;
  /** EWMA smoothing factor in (0, 1]. */
  readonly alpha: number;
  readonly load?: number;
  readonly latencyMs?: number;
  readonly score?: number;
  readonly samples: number;
  /** What the profile declared; stands in until the first measured sample of that field. */
  readonly declared: { readonly latencyMs?: number; readonly score?: number };
}

/** What a node actor is created with. */
export interface NodeInput {
  readonly id: string;
  /** @defaultValue 0.3 */
  readonly alpha?: number;
  readonly latencyMs?: number;
  readonly score?: number;
}

/** The events a node actor understands. */
export type NodeEvent =
  | { readonly type: 'node.telemetry'; readonly sample: NodeSample }
  | { readonly type: 'node.down' }
  | { readonly type: 'node.alive' }
  | { readonly type: 'node.retire' };

/** True for a number the EWMA may take: finite and not negative (score must also be > 0). */
export function isGoodValue(field: keyof NodeSample, v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && (field !== 'score' || v > 0);
}

/**
 * The first bad field of a sample, or undefined when it is good: every key one of `load`,
 * `latencyMs`, `score`, at least one of them given, each finite and >= 0. `'sample'` means the
 * sample as a whole: not an object, an unknown key (a typo such as `latency` must not count as a
 * sample), or no known key at all; {@link sampleProblem} says which.
 */
export function badSampleField(sample: NodeSample): keyof NodeSample | 'sample' | undefined {
  if (sample === null || typeof sample !== 'object') return 'sample';
  // One pass over the keys: it runs twice per report (the runtime's check and this machine's guard).
  let known = 0;
  for (const key in sample) {
    const value = (sample as Readonly<Record<string, unknown>>)[key];
    if (key !== 'load' && key !== 'latencyMs' && key !== 'score') return 'sample';
    if (value === undefined) continue;
    if (!isGoodValue(key, value)) return key;
    known++;
  }
  return known === 0 ? 'sample' : undefined;
}

/** What is wrong with a sample {@link badSampleField} refuses, in words; undefined when it is good. */
export function sampleProblem(sample: NodeSample): string | undefined {
  const bad = badSampleField(sample);
  if (bad === undefined) return undefined;
  if (bad !== 'sample') {
    const value = (sample as Readonly<Record<string, unknown>>)[bad];
    return `"${bad}" must be a finite number >= 0${bad === 'score' ? ' (and > 0)' : ''}, got ${String(value)}`;
  }
  if (sample === null || typeof sample !== 'object') return `a sample must be an object { load?, latencyMs?, score? }, got ${String(sample)}`;
  const unknown = Object.keys(sample).filter((k) => k !== 'load' && k !== 'latencyMs' && k !== 'score');
  if (unknown.length > 0) return `unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')} (a sample has load, latencyMs, score)`;
  return 'the sample has none of load, latencyMs, score';
}

/** `ewma ← α·sample + (1−α)·ewma`; the first sample initialises. */
export function ewma(previous: number | undefined, sample: number | undefined, alpha: number): number | undefined {
  if (sample === undefined) return previous;
  return previous === undefined ? sample : alpha * sample + (1 - alpha) * previous;
}

/**
 * The fields one good sample changes: the sample count and the EWMA of each field it carries
 * (only those, so `assign` copies the context once; this runs on every report).
 */
function sampleUpdate(ctx: NodeContext, sample: NodeSample): Partial<NodeContext> {
  const update: { -readonly [K in keyof NodeContext]?: NodeContext[K] } = { samples: ctx.samples + 1 };
  if (sample.load !== undefined) update.load = ewma(ctx.load, sample.load, ctx.alpha);
  if (sample.latencyMs !== undefined) update.latencyMs = ewma(ctx.latencyMs, sample.latencyMs, ctx.alpha);
  if (sample.score !== undefined) update.score = ewma(ctx.score, sample.score, ctx.alpha);
  return update;
}

/**
 * The values routing uses: measured EWMAs, else the declared ones. Written into `out` (a new
 * object by default), so the runtime builds a node's telemetry entry in one allocation.
 */
export function effectiveValues<T extends { load?: number; latencyMs?: number; score?: number }>(ctx: NodeContext, out: T = {} as T): T {
  const latencyMs = ctx.latencyMs ?? ctx.declared.latencyMs;
  const score = ctx.score ?? ctx.declared.score;
  if (ctx.load !== undefined) out.load = ctx.load;
  if (latencyMs !== undefined) out.latencyMs = latencyMs;
  if (score !== undefined) out.score = score;
  return out;
}

/**
 * One node of the swarm: alive or down (and finally retired), holding its load, latency and
 * score EWMAs. A bad sample (NaN, ±Infinity, negative) is refused by a guard and leaves every
 * EWMA untouched. A down node ignores telemetry: it is stale by definition.
 */
export const nodeMachine = setup({
  types: {
    context: {} as NodeContext,
    events: {} as NodeEvent,
    input: {} as NodeInput,
  },
  guards: {
    goodSample: ({ event }) => event.type === 'node.telemetry' && badSampleField(event.sample) === undefined,
  },
  actions: {
    recordSample: assign(({ context, event }) => (event.type === 'node.telemetry' ? sampleUpdate(context, event.sample) : {})),
  },
}).createMachine({
  id: 'node',
  context: ({ input }) => ({
    id: input.id,
    alpha: input.alpha ?? 0.3,
    samples: 0,
    declared: {
      ...(input.latencyMs !== undefined ? { latencyMs: input.latencyMs } : {}),
      ...(input.score !== undefined ? { score: input.score } : {}),
    },
  }),
  initial: 'alive',
  states: {
    alive: {
      on: {
        'node.telemetry': { guard: 'goodSample', actions: 'recordSample' },
        'node.down': { target: 'down' },
        'node.retire': { target: 'retired' },
      },
    },
    down: {
      on: {
        'node.alive': { target: 'alive' },
        'node.retire': { target: 'retired' },
      },
    },
    retired: { type: 'final' },
  },
});
