import { PlanError, SwarmError } from './errors.js';
import { assertPlanShape, profileIssues } from './validate.js';
import type { NodeProfile, NodeStates, NodeTelemetry, SwarmPlan, SwarmStateLike } from './types.js';

/** The fields of a node's telemetry a caller may set. */
export type TelemetryPatch = Partial<Omit<NodeTelemetry, 'samples'>> & { readonly samples?: number };

/** The nodes a plan uses, in first-use order. */
export function planNodeIds(plan: SwarmPlan): string[] {
  const ids = new Set<string>();
  for (const p of plan.pipelines) for (const s of p.stages) ids.add(s.nodeId);
  return [...ids];
}

/** Checks a telemetry patch: numbers finite and >= 0 (score > 0), `alive` a boolean. */
export function telemetryPatchIssue(nodeId: string, patch: TelemetryPatch): string | undefined {
  if (patch === null || typeof patch !== 'object') return `telemetry for node "${nodeId}" must be an object`;
  for (const field of ['latencyMs', 'load', 'score', 'samples'] as const) {
    const v = patch[field];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      return `telemetry for node "${nodeId}": "${field}" must be a finite number >= 0, got ${String(v)}`;
    }
  }
  if (patch.score !== undefined && patch.score <= 0) return `telemetry for node "${nodeId}": "score" must be > 0, got ${patch.score}`;
  if (patch.alive !== undefined && typeof patch.alive !== 'boolean') return `telemetry for node "${nodeId}": "alive" must be a boolean`;
  return undefined;
}

/**
 * The immutable pair of a plan (who should run what) and the telemetry of every node (how each
 * is now). Plain data: `JSON.stringify(state)` gives `{ plan, nodes }`.
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
    assertPlanShape(plan);
    const nodes: Record<string, NodeTelemetry> = {};
    for (const id of planNodeIds(plan)) nodes[id] = Object.freeze({ alive: true, samples: 0 });
    return new SwarmState(plan, nodes);
  }

  /**
   * Like {@link SwarmState.fromPlan}, plus each profile's declared latency and score (spares too).
   * @throws {PlanError} `InvalidInput` for a bad profile (a NaN latency would poison every cost).
   */
  static fromProfiles(plan: SwarmPlan, profiles: readonly NodeProfile[]): SwarmState {
    assertPlanShape(plan);
    const issues = profileIssues(profiles);
    if (issues.length > 0) throw new PlanError('InvalidInput', issues.map((i) => i.message).join('; '));
    const nodes: Record<string, NodeTelemetry> = {};
    for (const id of planNodeIds(plan)) nodes[id] = Object.freeze({ alive: true, samples: 0 });
    for (const p of profiles) nodes[p.id] = Object.freeze(declaredTelemetry(p));
    return new SwarmState(plan, nodes);
  }

  /** Wraps existing plain data (for example a state read back from JSON). */
  static from(like: SwarmStateLike): SwarmState {
    const nodes: Record<string, NodeTelemetry> = {};
    for (const [id, t] of Object.entries(like.nodes)) nodes[id] = Object.freeze({ ...t });
    return new SwarmState(like.plan, nodes);
  }

  /**
   * A new state with one node's telemetry patched; this state is unchanged.
   * @throws {SwarmError} `UnknownNode` for a node the state does not know, `BadTelemetry` for a bad value.
   */
  withNode(nodeId: string, patch: TelemetryPatch): SwarmState {
    const current = this.nodes[nodeId];
    if (current === undefined) throw new SwarmError('UnknownNode', `unknown node "${nodeId}": the state knows ${Object.keys(this.nodes).join(', ') || 'no node'}`);
    const issue = telemetryPatchIssue(nodeId, patch);
    if (issue !== undefined) throw new SwarmError('BadTelemetry', issue);
    return new SwarmState(this.plan, { ...this.nodes, [nodeId]: Object.freeze({ ...current, ...patch }) });
  }

  /** A new state with another plan; nodes of the new plan unknown so far start alive and cold. */
  withPlan(plan: SwarmPlan): SwarmState {
    const nodes: Record<string, NodeTelemetry> = { ...this.nodes };
    for (const id of planNodeIds(plan)) nodes[id] ??= Object.freeze({ alive: true, samples: 0 });
    return new SwarmState(plan, nodes);
  }

  /** Plain data: `{ plan, nodes }`. */
  toJSON(): SwarmStateLike {
    return { plan: this.plan, nodes: this.nodes };
  }
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
