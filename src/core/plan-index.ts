import { ownValue } from './records.js';
import { assertPlanShape } from './validate.js';
import type { ModelSpec, NodeStates, Pipeline, SwarmPlan } from './types.js';

/** Lookups derived from a plan once; plans are immutable, so the cache never goes stale. */
export interface PlanIndex {
  readonly models: ReadonlyMap<string, ModelSpec>;
  /** Each model's pipelines, sorted by id (the tie-break order). */
  readonly pipelinesByModel: ReadonlyMap<string, readonly Pipeline[]>;
}

const cache = new WeakMap<SwarmPlan, PlanIndex>();

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The cached index of `plan`. */
export function planIndex(plan: SwarmPlan): PlanIndex {
  let index = cache.get(plan);
  if (index === undefined) {
    const models = new Map(plan.models.map((m) => [m.id, m] as const));
    const pipelinesByModel = new Map<string, Pipeline[]>();
    for (const m of plan.models) pipelinesByModel.set(m.id, []);
    for (const p of plan.pipelines) pipelinesByModel.get(p.modelId)?.push(p);
    for (const list of pipelinesByModel.values()) list.sort(byId);
    index = { models, pipelinesByModel };
    cache.set(plan, index);
  }
  return index;
}

const shapeChecked = new WeakSet<SwarmPlan>();

/**
 * Checks a caller's plan once per plan object (plans are immutable): the public entry points
 * call this so a hand-written plan with a gap or an overlap is refused, not half served.
 * @throws {PlanError} `InvalidPlan` naming every shape issue.
 */
export function assertPlanShapeOnce(plan: SwarmPlan): void {
  if (shapeChecked.has(plan)) return;
  assertPlanShape(plan);
  shapeChecked.add(plan);
}

/** The ids of a pipeline's nodes that are down (or unknown to the telemetry). */
export function deadNodesOf(pipeline: Pipeline, nodes: NodeStates, alsoDead?: string): string[] {
  const dead: string[] = [];
  for (const s of pipeline.stages) {
    if (s.nodeId === alsoDead || ownValue(nodes, s.nodeId)?.alive !== true) dead.push(s.nodeId);
  }
  return dead;
}

/** Whether every node of the pipeline is alive. */
export function isIntact(pipeline: Pipeline, nodes: NodeStates, alsoDead?: string): boolean {
  for (const s of pipeline.stages) {
    if (s.nodeId === alsoDead || ownValue(nodes, s.nodeId)?.alive !== true) return false;
  }
  return true;
}
