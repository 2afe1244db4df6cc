/**
 * A proposal's moves as a swarm carries them out (docs/rebalance.md "Make-before-break"): all at
 * once, each over the plan as it is now. A later round may re-form a copy an earlier move formed,
 * or load on a node an earlier move freed; such moves become one move from the plan's own copies
 * to their last copies, with its loads, load time and memory priced again against the plan as it is.
 */
import { layerFootprint } from '../core/plan-disjoint.js';
import type { ModelSpec, NodeProfile, Pipeline, SwarmPlan } from '../core/types.js';
import { loadSeconds, spanLoads } from './move-cost.js';
import type { RebalanceMove } from './propose-moves.js';
import type { ResolvedRebalanceOptions } from './rebalance-options.js';

const EPS = 1e-9;

/**
 * The moves of a proposal made on `plan`, each replacing copies of `plan` only: chains (a move
 * that replaces a copy another move formed) merged into one move.
 */
export function independentMoves(plan: SwarmPlan, moves: readonly RebalanceMove[], profiles: readonly NodeProfile[], o: ResolvedRebalanceOptions): RebalanceMove[] {
  const formedBy = new Map<string, number>();
  const parent = moves.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i] as number)));
  // One group per chain, and per node: two moves that touch one node (one frees it, the other
  // loads on it) form in one transition, so no plan between them has two copies of a model on it.
  const byNode = new Map<string, number>();
  const stagesOf = new Map(plan.pipelines.map((p) => [p.id, p.stages] as const));
  moves.forEach((m, i) => {
    for (const id of m.removes) {
      const j = formedBy.get(id);
      if (j !== undefined) parent[find(i)] = find(j);
    }
    for (const p of m.adds) {
      formedBy.set(p.id, i);
      stagesOf.set(p.id, p.stages);
    }
    const touched = [...m.removes.flatMap((id) => stagesOf.get(id) ?? []), ...m.adds.flatMap((p) => p.stages)];
    for (const s of touched) {
      // Copies of different models may share a node; copies of one model may not.
      const key = `${m.modelId}\u0000${s.nodeId}`;
      const j = byNode.get(key);
      if (j === undefined) byNode.set(key, i);
      else parent[find(i)] = find(j);
    }
  });
  const groups = new Map<number, RebalanceMove[]>();
  moves.forEach((m, i) => (groups.get(find(i)) ?? groups.set(find(i), []).get(find(i)))?.push(m));
  const original = new Map(plan.pipelines.map((p) => [p.id, p] as const));
  const byId = new Map(profiles.map((p) => [p.id, p] as const));
  const used = new Map<string, number>();
  const models = new Map(plan.models.map((m) => [m.id, m] as const));
  for (const p of plan.pipelines) for (const s of p.stages) used.set(s.nodeId, (used.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * layerFootprint(models.get(p.modelId) as ModelSpec));
  const out: RebalanceMove[] = [];
  for (const chain of groups.values()) {
    if (chain.length === 1) {
      out.push(chain[0] as RebalanceMove);
      continue;
    }
    const model = models.get((chain[0] as RebalanceMove).modelId) as ModelSpec;
    const removedLater = new Set(chain.flatMap((m) => m.removes));
    const removes = [...removedLater].map((id) => original.get(id)).filter((p): p is Pipeline => p !== undefined);
    const adds = chain.flatMap((m) => m.adds).filter((p) => !removedLater.has(p.id));
    const loads = spanLoads(model, removes, adds, byId, o.loadGbPerSecond);
    const seconds = loadSeconds(loads);
    const fp = layerFootprint(model);
    const loading = new Map<string, number>();
    for (const l of loads) loading.set(l.nodeId, (loading.get(l.nodeId) ?? 0) + (l.layerEnd - l.layerStart) * fp);
    const dropsFirst = [...loading].filter(([id, gb]) => gb > (byId.get(id)?.memoryGb ?? 0) - (used.get(id) ?? 0) + EPS).map(([id]) => id).sort();
    const gain = chain.reduce((s, m) => s + m.gain, 0);
    const replaced = chain.filter((m) => m.removes.some((id) => original.has(id))).reduce((s, m) => s + m.replaced, 0);
    const lost = dropsFirst.length > 0 ? replaced * seconds : 0;
    out.push({ kind: 'regroup', modelId: model.id, removes: removes.map((p) => p.id), adds, loads, dropsFirst, layersMoved: loads.reduce((n, l) => n + l.layerEnd - l.layerStart, 0), gain, replaced, loadSeconds: seconds, lost, value: gain * Math.max(0, o.horizonSeconds - seconds) - lost });
  }
  return out;
}
