/**
 * The arithmetic growth and retirement share with the planner (docs/cost.md "Growth and
 * retirement, counted once"): every option is priced by the plan's counted-once throughput,
 * layer-weighted (Σ over models of throughput × layers, src/core/shared-throughput.ts). A newcomer
 * builds a copy for the model where that gains most; a retiring node's layers go where the plan
 * loses least. Every decision reports the layers it moves.
 */
import { sharedThroughput } from './shared-throughput.js';
import type { ModelSpec, NodeProfile, Pipeline, Stage, SwarmPlan } from './types.js';

const EPS = 1e-9;

/** The plan's counted-once layer-weighted throughput on `profiles`. */
export function layerRate(plan: SwarmPlan, profiles: readonly NodeProfile[]): number {
  return sharedThroughput(plan, profiles).layerRate;
}

/** Layers that land on a node where they were not before, between two stage lists of one copy. */
export function layersMoved(before: readonly Stage[], after: readonly Stage[]): number {
  let moved = 0;
  for (const s of after) {
    let kept = 0;
    for (const b of before) if (b.nodeId === s.nodeId) kept += Math.max(0, Math.min(s.layerEnd, b.layerEnd) - Math.max(s.layerStart, b.layerStart));
    moved += s.layerEnd - s.layerStart - kept;
  }
  return moved;
}

/**
 * Among the candidate holders of a retiring stage's range (each a list of stages that covers it),
 * the one after which the plan's counted-once throughput is highest; the first on ties.
 */
export function leastLoss(plan: SwarmPlan, profiles: readonly NodeProfile[], p: Pipeline, at: number, options: readonly Stage[][], merge: (stages: Stage[]) => Stage[]): Stage[] | undefined {
  let best: Stage[] | undefined;
  let bestRate = Number.NEGATIVE_INFINITY;
  for (const moves of options) {
    const stages = merge([...p.stages.slice(0, at), ...moves, ...p.stages.slice(at + 1)]);
    const rate = layerRate({ models: plan.models, pipelines: plan.pipelines.map((q) => (q.id === p.id ? { ...q, stages } : q)) }, profiles);
    if (rate > bestRate * (1 + EPS) + EPS) {
      best = moves;
      bestRate = rate;
    }
  }
  return best;
}

/** The nodes that serve some copy of a plan of several models (growth leaves them to their copy). */
export function busyNodes(plan: SwarmPlan, model: ModelSpec): Set<string> {
  const busy = new Set<string>();
  if (plan.models.length < 2) return busy;
  for (const p of plan.pipelines) if (p.modelId !== model.id) for (const s of p.stages) busy.add(s.nodeId);
  return busy;
}
