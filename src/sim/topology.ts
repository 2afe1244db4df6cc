/**
 * The topology file of `swarm-sim` and of scenarios (docs/design.md §8): `{ models, nodes }`, validated
 * with zod, cross-checked (unique ids, one base model, known fallbacks) and checked against
 * the planner so an impossible capacity is an input error, not a crash later.
 */
import { z } from 'zod';
import { describeValue } from '../core/describe.js';
import { PlanError } from '../core/errors.js';
import { planSwarm } from '../core/plan.js';
import type { ModelSpec, NodeProfile } from '../core/types.js';
import { InputError, jsonPath, parseJsonText, type Loaded, type PathSegment } from './input-error.js';

/**
 * Upper bounds that keep a hostile file from making the planner spin: a topology at these limits
 * plans and runs `swarm-sim` in a few seconds (docs/performance.md has the measurements). `totalLayers`
 * bounds the layers of all models together, the planner's work growing with it.
 */
export const TOPOLOGY_LIMITS = { nodes: 1000, models: 16, layers: 10_000, totalLayers: 10_000, pipelines: 64, idLength: 200 } as const;

const id = z.string().min(1, 'must be a non-empty string').max(TOPOLOGY_LIMITS.idLength);
const nonNegative = z.number().min(0, 'must be >= 0');
const positive = z.number().positive('must be > 0');

/** Schema of one node: `{ id, memoryGb, score?, latencyMs?, slots?, loadGbPerSecond? }`. */
export const nodeProfileSchema = z.strictObject({
  id,
  memoryGb: nonNegative,
  score: positive.optional(),
  latencyMs: nonNegative.optional(),
  slots: z.int().min(1, 'must be >= 1').max(1_000_000).optional(),
  loadGbPerSecond: positive.max(1_000_000).optional(),
});

/** Schema of one model: `{ id, layers, layerGb?, pipelines?, kind?, fallback?, stageFactor?, kvReserveGb?, kvGbPerToken? }`. */
export const modelSpecSchema = z.strictObject({
  id,
  layers: z.int().min(1, 'must be >= 1').max(TOPOLOGY_LIMITS.layers),
  layerGb: positive.optional(),
  pipelines: z.int().min(1, 'must be >= 1').max(TOPOLOGY_LIMITS.pipelines).optional(),
  kind: z.enum(['base', 'expert']).optional(),
  fallback: id.optional(),
  stageFactor: z.number().min(1, 'must be >= 1').max(TOPOLOGY_LIMITS.layers).optional(),
  kvReserveGb: nonNegative.max(1_000_000, 'must be <= 1000000').optional(),
  kvGbPerToken: positive.max(1, 'must be <= 1').optional(),
});

/** Schema of a topology file, with the checks that span several fields. */
export const topologySchema = z
  .strictObject({
    /** Free text; ignored by the simulation. */
    description: z.string().optional(),
    models: z.array(modelSpecSchema).min(1, 'at least one model is required').max(TOPOLOGY_LIMITS.models),
    nodes: z.array(nodeProfileSchema).min(1, 'at least one node is required').max(TOPOLOGY_LIMITS.nodes),
  })
  .superRefine((topology, ctx) => {
    const totalLayers = topology.models.reduce((sum, m) => sum + m.layers, 0);
    if (totalLayers > TOPOLOGY_LIMITS.totalLayers) {
      ctx.addIssue({ code: 'custom', path: ['models'], message: `the models have ${totalLayers} layers in all, over the limit of ${TOPOLOGY_LIMITS.totalLayers} (docs/inputs.md)` });
    }
    const firstNode = new Map<string, number>();
    topology.nodes.forEach((n, i) => {
      const first = firstNode.get(n.id);
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['nodes', i, 'id'], message: `duplicate node id "${n.id}" (already at $.nodes[${first}].id)` });
      else firstNode.set(n.id, i);
    });
    const firstModel = new Map<string, number>();
    let base: number | undefined;
    topology.models.forEach((m, i) => {
      const first = firstModel.get(m.id);
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['models', i, 'id'], message: `duplicate model id "${m.id}" (already at $.models[${first}].id)` });
      else firstModel.set(m.id, i);
      const kind = m.kind ?? (i === 0 ? 'base' : 'expert');
      if (kind === 'base') {
        if (base !== undefined) ctx.addIssue({ code: 'custom', path: ['models', i, 'kind'], message: `only one model may be "base" ($.models[${base}] already is)` });
        else base = i;
      }
    });
    topology.models.forEach((m, i) => {
      if (m.fallback === undefined) return;
      if (m.fallback === m.id) ctx.addIssue({ code: 'custom', path: ['models', i, 'fallback'], message: `a model cannot be its own fallback` });
      else if (!firstModel.has(m.fallback)) {
        ctx.addIssue({ code: 'custom', path: ['models', i, 'fallback'], message: `unknown model "${m.fallback}" (models: ${[...firstModel.keys()].join(', ')})` });
      }
    });
  });

/** A validated topology: the models to serve and the machines to serve them on. */
export interface Topology {
  readonly description?: string;
  readonly models: readonly ModelSpec[];
  readonly nodes: readonly NodeProfile[];
}

/** Options of {@link loadTopology} and {@link topologyFromValue}. */
export interface TopologyOptions {
  /** Sets the number of copies of every model (the `--pipelines` flag). */
  readonly pipelines?: number;
  /** JSON path of the topology inside its document. @defaultValue '$' */
  readonly at?: string;
  /** Also check that the planner can place every copy. @defaultValue true */
  readonly checkCapacity?: boolean;
}

/**
 * Parses and validates a topology file's text.
 * Never throws: returns the topology, or an {@link InputError} naming `file` and the JSON path.
 * @example
 * const loaded = loadTopology(readFileSync(f, 'utf8'), f, { pipelines: 2 });
 * if (!loaded.ok) console.error(loaded.error.message);
 */
export function loadTopology(text: string, file: string, options: TopologyOptions = {}): Loaded<Topology> {
  const issue = optionsIssue(options);
  if (issue !== undefined) return { ok: false, error: new InputError(file, '', issue) };
  const json = parseJsonText(text, file);
  return json.ok ? topologyFromValue(json.value, file, options) : json;
}

/** Validates an already parsed value as a topology; see {@link loadTopology}. Never throws. */
export function topologyFromValue(value: unknown, file: string, options: TopologyOptions = {}): Loaded<Topology> {
  const issue = optionsIssue(options);
  if (issue !== undefined) return { ok: false, error: new InputError(file, '', issue) };
  const at = options.at ?? '$';
  try {
    const parsed = topologySchema.safeParse(value);
    if (!parsed.success) return { ok: false, error: firstIssue(parsed.error.issues, file, at) };
    const topology = withPipelines(strip(parsed.data), options.pipelines);
    if (options.checkCapacity === false) return { ok: true, value: topology };
    const capacity = capacityError(topology, file, at);
    return capacity === undefined ? { ok: true, value: topology } : { ok: false, error: capacity };
  } catch (cause) {
    // The schema and planner are meant never to throw on data; if they do, still answer with a clear error.
    const reason = cause instanceof Error ? cause.message : String(cause);
    return { ok: false, error: new InputError(file, at, `cannot use this topology: ${reason}`, { cause }) };
  }
}

/** What is wrong with the options of a topology loader, if anything. */
function optionsIssue(options: unknown): string | undefined {
  if (options === null || typeof options !== 'object') return `topology options must be an object { pipelines?, at?, checkCapacity? }, got ${describeValue(options)}`;
  const o = options as Record<string, unknown>;
  if (o['pipelines'] !== undefined && !(Number.isInteger(o['pipelines']) && (o['pipelines'] as number) >= 1 && (o['pipelines'] as number) <= TOPOLOGY_LIMITS.pipelines)) {
    return `option "pipelines" must be an integer from 1 to ${TOPOLOGY_LIMITS.pipelines}, got ${describeValue(o['pipelines'])}`;
  }
  if (o['at'] !== undefined && typeof o['at'] !== 'string') return `option "at" must be a JSON path string, got ${describeValue(o['at'])}`;
  if (o['checkCapacity'] !== undefined && typeof o['checkCapacity'] !== 'boolean') return `option "checkCapacity" must be a boolean, got ${describeValue(o['checkCapacity'])}`;
  return undefined;
}

/** Turns the first zod issue into one line naming the path; counts the others. */
export function firstIssue(issues: readonly { path: readonly PathSegment[]; message: string }[], file: string, at: string): InputError {
  const first = issues[0];
  if (first === undefined) return new InputError(file, at, 'invalid');
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more ${issues.length === 2 ? 'problem' : 'problems'})` : '';
  return new InputError(file, jsonPath(first.path, at), `${first.message}${more}`);
}

function strip(t: z.infer<typeof topologySchema>): Topology {
  // zod leaves optional keys absent; copying keeps the result plain and detached from the input.
  return JSON.parse(JSON.stringify(t)) as Topology;
}

function withPipelines(t: Topology, pipelines: number | undefined): Topology {
  if (pipelines === undefined) return t;
  return { ...t, models: t.models.map((m) => ({ ...m, pipelines })) };
}

/**
 * Runs the planner; when it cannot place every copy, finds the first model that does not fit
 * (planning the models in order, as the planner does) and names it.
 */
function capacityError(t: Topology, file: string, at: string): InputError | undefined {
  try {
    planSwarm(t.nodes, { models: t.models });
    return undefined;
  } catch (cause) {
    if (!(cause instanceof PlanError)) throw cause;
    for (let i = 1; i <= t.models.length; i++) {
      try {
        // Fallbacks may name later models; they do not take memory, so leave them out of the prefix.
        planSwarm(t.nodes, { models: t.models.slice(0, i).map(({ fallback: _fallback, ...m }) => m) });
      } catch (partial) {
        const reason = partial instanceof Error ? partial.message : String(partial);
        return new InputError(file, jsonPath(['models', i - 1], at), `impossible capacity: ${reason}`, { cause });
      }
    }
    return new InputError(file, at, `impossible plan: ${cause.message}`, { cause });
  }
}
