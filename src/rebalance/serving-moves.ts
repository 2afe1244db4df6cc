/**
 * Moves that stop no more than they change (docs/rebalance.md "Replicas, serve and agents"): a
 * copy a move would re-form exactly as it is stays in the plan, out of the move — it loads
 * nothing, and a break-first move would otherwise stop it for the load (a regroup of two copies,
 * one of them re-formed as it was, left a model no copy while it loaded). Pure.
 */
import { sharedThroughput } from '../core/shared-throughput.js';
import type { NodeProfile, Pipeline, SwarmPlan } from '../core/types.js';
import type { PlannedMove } from '../runtime/rebalance-hook.js';

const sameStages = (a: Pipeline, b: Pipeline) => a.modelId === b.modelId && a.stages.length === b.stages.length && a.stages.every((s, i) => s.nodeId === b.stages[i]?.nodeId && s.layerStart === b.stages[i]?.layerStart && s.layerEnd === b.stages[i]?.layerEnd);

/** `moves` (independent, over `plan`) without the copies they re-form as they are; `after` the counted-once layer-rate once they formed (NaN: unchanged). */
export function servingMoves<M extends PlannedMove>(plan: SwarmPlan, moves: readonly M[], profiles: readonly NodeProfile[]): { moves: M[]; after: number } {
  const byId = new Map(plan.pipelines.map((p) => [p.id, p] as const));
  const trimmed: M[] = [];
  for (const m of moves) {
    const kept = new Set<string>();
    const adds = m.adds.filter((p) => {
      const same = m.removes.find((id) => !kept.has(id) && byId.get(id) !== undefined && sameStages(byId.get(id) as Pipeline, p));
      if (same !== undefined) kept.add(same);
      return same === undefined;
    });
    if (kept.size === 0) trimmed.push(m);
    else if (adds.length > 0) {
      const gone = new Set(m.adds.filter((p) => !adds.includes(p)).map((p) => p.id));
      const loads = m.loads.filter((l) => !gone.has(l.pipelineId));
      trimmed.push({ ...m, removes: m.removes.filter((id) => !kept.has(id)), adds, loads, layersMoved: loads.reduce((n, l) => n + l.layerEnd - l.layerStart, 0) });
    }
  }
  const out = trimmed;
  if (out.length === moves.length && out.every((m, i) => m === moves[i])) return { moves: out, after: Number.NaN };
  const removed = new Set(out.flatMap((m) => m.removes));
  const next: SwarmPlan = { models: plan.models, pipelines: [...plan.pipelines.filter((p) => !removed.has(p.id)), ...out.flatMap((m) => m.adds)] };
  return { moves: out, after: sharedThroughput(next, profiles).layerRate };
}
