import { describeValue, isRecordLike } from './describe.js';
import { PlanError, SwarmError } from './errors.js';
import { nullRecord, ownValue, setOwn } from './records.js';
import { assertPlanShapeOnce } from './plan-index.js';
import { profileIssues } from './validate.js';
import type { NodeProfile, NodeStates, NodeTelemetry, SwarmPlan, SwarmStateLike } from './types.js';

/** The fields of a node's telemetry a caller may set. */
export type TelemetryPatch = Partial<Omit<NodeTelemetry, 'samples'>> & { readonly samples?: number };

/** The nodes a plan uses, in first-use order. */
export function planNodeIds(plan: SwarmPlan): string[] {
  const ids = new Set<string>();
  for (const p of plan.pipelines) for (const s of p.stages) ids.add(s.nodeId);
  return [...ids];
}

/** Checks a telemetry patch: numbers finite and >= 0 (score > 0), `alive` and `suspect` booleans. */
export function telemetryPatchIssue(nodeId: string, patch: TelemetryPatch): string | undefined {
  if (patch === null || typeof patch !== 'object') return `telemetry for node "${nodeId}" must be an object`;
  for (const field of ['latencyMs', 'load', 'score', 'samples'] as const) {
    const v = patch[field];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      return `telemetry for node "${nodeId}": "${field}" must be a finite number >= 0, got ${describeValue(v)}`;
    }
  }
  if (patch.score !== undefined && patch.score <= 0) return `telemetry for node "${nodeId}": "score" must be > 0, got ${patch.score}`;
  if (patch.alive !== undefined && typeof patch.alive !== 'boolean') return `telemetry for node "${nodeId}": "alive" must be a boolean`;
  if (patch.suspect !== undefined && typeof patch.suspect !== 'boolean') return `telemetry for node "${nodeId}": "suspect" must be a boolean`;
  return undefined;
}

/**
 * The fields of a telemetry patch, read once into a fresh plain object: a getter cannot change a
 * value between its check and its use, and keys other than the six known fields are ignored.
 */
function copyPatch(patch: TelemetryPatch): TelemetryPatch {
  const out: { -readonly [K in keyof TelemetryPatch]: TelemetryPatch[K] } = {};
  for (const field of ['alive', 'latencyMs', 'load', 'score', 'samples', 'suspect'] as const) {
    const v: unknown = patch[field];
    if (v !== undefined) (out as Record<string, unknown>)[field] = v;
  }
  return out;
}

/** A node id as given by a caller: only a string can name a node. */
function requireNodeId(nodeId: unknown, where: string): string {
  if (typeof nodeId !== 'string') throw new SwarmError('InvalidInput', `${where}: a node id must be a string, got ${describeValue(nodeId)}`);
  return nodeId;
}

/**
 * The immutable pair of a plan (who should run what) and the telemetry of every node (how each
 * is now). Plain data: `JSON.stringify(state)` gives `{ plan, nodes }`. `nodes` is a frozen
 * null-prototype object, so a node named `toString` or `__proto__` is a node like any other
 * (docs/inputs.md).
 */
export class SwarmState implements SwarmStateLike {
  readonly plan: SwarmPlan;
  readonly nodes: NodeStates;

  private constructor(plan: SwarmPlan, nodes: Record<string, NodeTelemetry>) {
    this.plan = plan;
    this.nodes = Object.freeze(nodes);
  }

  /**
   * Cold telemetry: every node of the plan alive, nothing measured.
   * @throws {PlanError} `InvalidPlan` for a plan with a gap, an overlap, wrong coverage, an unknown
   * model or copies sharing a node: routing must never serve half a copy.
   * @example const state = SwarmState.fromPlan(planSwarm(profiles, { models }));
   */
  static fromPlan(plan: SwarmPlan): SwarmState {
    assertPlanShapeOnce(plan);
    return new SwarmState(plan, coldNodes(plan));
  }

  /**
   * Like {@link SwarmState.fromPlan}, plus each profile's declared latency and score (spares too).
   * @throws {PlanError} `InvalidPlan` for a bad plan, `InvalidInput` for a bad profile (a NaN latency would poison every cost).
   */
  static fromProfiles(plan: SwarmPlan, profiles: readonly NodeProfile[]): SwarmState {
    assertPlanShapeOnce(plan);
    const issues = profileIssues(profiles);
    if (issues.length > 0) throw new PlanError('InvalidInput', issues.map((i) => i.message).join('; '));
    const nodes = coldNodes(plan);
    for (const p of profiles) setOwn(nodes, p.id, Object.freeze(declaredTelemetry(p)));
    return new SwarmState(plan, nodes);
  }

  /**
   * Wraps existing plain data (for example a state read back from JSON). Each node's telemetry is
   * copied (its six known fields) and checked like a {@link SwarmState.withNode} patch.
   * @throws {SwarmError} `InvalidInput` when `like` is not `{ plan, nodes }`, `BadTelemetry` for a bad
   * node entry; {@link PlanError} `InvalidPlan` for a plan with a gap, an overlap or wrong coverage.
   */
  static from(like: SwarmStateLike): SwarmState {
    if (!isRecordLike(like) || !isRecordLike(like.nodes)) {
      throw new SwarmError('InvalidInput', `SwarmState.from needs plain data { plan, nodes } with "nodes" an object of telemetry by node id, got ${describeValue(like)}`);
    }
    const plan = like.plan;
    assertPlanShapeOnce(plan);
    const nodes = nullRecord<NodeTelemetry>();
    for (const [id, t] of Object.entries(like.nodes)) {
      if (!isRecordLike(t)) throw new SwarmError('BadTelemetry', `telemetry for node "${id}" must be an object, got ${describeValue(t)}`);
      const copy = copyPatch(t as TelemetryPatch);
      const issue = telemetryPatchIssue(id, copy) ?? (typeof copy.alive === 'boolean' ? undefined : `telemetry for node "${id}": "alive" must be a boolean`);
      if (issue !== undefined) throw new SwarmError('BadTelemetry', issue);
      setOwn(nodes, id, Object.freeze({ ...copy, alive: copy.alive === true, samples: copy.samples ?? 0 }));
    }
    return new SwarmState(plan, nodes);
  }

  /**
   * A new state with one node's telemetry patched; this state is unchanged.
   * @throws {SwarmError} `UnknownNode` for a node the state does not know, `BadTelemetry` for a bad
   * value, `InvalidInput` for an id that is not a string.
   */
  withNode(nodeId: string, patch: TelemetryPatch): SwarmState {
    const id = requireNodeId(nodeId, 'withNode');
    const current = ownValue(this.nodes, id);
    if (current === undefined) {
      const known = Object.keys(this.nodes);
      const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, … (${known.length} nodes)` : known.join(', ');
      throw new SwarmError('UnknownNode', `unknown node ${describeValue(id)}: the state knows ${list || 'no node'}`);
    }
    if (patch === null || typeof patch !== 'object') throw new SwarmError('BadTelemetry', `telemetry for node "${id}" must be an object, got ${describeValue(patch)}`);
    const copy = copyPatch(patch);
    const issue = telemetryPatchIssue(id, copy);
    if (issue !== undefined) throw new SwarmError('BadTelemetry', issue);
    const nodes = copyNodes(this.nodes);
    setOwn(nodes, id, Object.freeze({ ...current, ...copy }));
    return new SwarmState(this.plan, nodes);
  }

  /**
   * A new state with another plan; nodes of the new plan unknown so far start alive and cold.
   * @throws {PlanError} `InvalidPlan` for a plan with a gap, an overlap or wrong coverage.
   */
  withPlan(plan: SwarmPlan): SwarmState {
    assertPlanShapeOnce(plan);
    const nodes = copyNodes(this.nodes);
    for (const id of planNodeIds(plan)) if (!Object.hasOwn(nodes, id)) setOwn(nodes, id, Object.freeze({ alive: true, samples: 0 }));
    return new SwarmState(plan, nodes);
  }

  /** Plain data: `{ plan, nodes }`. */
  toJSON(): SwarmStateLike {
    return { plan: this.plan, nodes: this.nodes };
  }
}

/** Every node of the plan alive and unmeasured, in a null-prototype table. */
function coldNodes(plan: SwarmPlan): Record<string, NodeTelemetry> {
  const nodes = nullRecord<NodeTelemetry>();
  for (const id of planNodeIds(plan)) setOwn(nodes, id, Object.freeze({ alive: true, samples: 0 }));
  return nodes;
}

/** A mutable null-prototype copy of a table. */
function copyNodes(from: NodeStates): Record<string, NodeTelemetry> {
  const nodes = nullRecord<NodeTelemetry>();
  for (const [id, t] of Object.entries(from)) setOwn(nodes, id, t);
  return nodes;
}

/** The telemetry a profile declares before anything is measured. */
export function declaredTelemetry(p: NodeProfile): NodeTelemetry {
  return {
    alive: true,
    samples: 0,
    ...(p.latencyMs !== undefined ? { latencyMs: p.latencyMs } : {}),
    ...(p.score !== undefined ? { score: p.score } : {}),
  };
}
