/**
 * Reference planner in the style of exo (exo-explore/exo, "ring memory-weighted
 * partitioning"), extended to several disjoint copies so it answers the same question as
 * planSwarm.
 *
 * Algorithm:
 * 1. Nodes that can hold at least one layer are sorted by memory, largest first (id breaks ties).
 * 2. They are dealt to the copies one by one, each to the copy with the least memory so far
 *    (longest-processing-time dealing on memory), so every copy gets a fair share of memory.
 * 3. Inside a copy, nodes keep that order and each takes the layers between the rounded
 *    cumulative memory fractions before and after it — exo's rule: layers in proportion to memory.
 * 4. Where rounding pushes a node past floor(memoryGb / layerGb), the excess goes to the next
 *    nodes with room (exo itself would run out of memory there; we are generous).
 * Speed (score) is never looked at: that is the point of comparison.
 */
import type { ModelSpec, NodeProfile, Pipeline, Stage } from '../../src/index.js';
import { capacityOf } from './throughput.js';

interface Member {
  readonly id: string;
  readonly memoryGb: number;
  readonly cap: number;
}

/**
 * Plans `model.pipelines` disjoint copies of one model the exo way.
 * @throws {Error} when a copy cannot hold the model (exo has no repair step).
 */
export function planExo(profiles: readonly NodeProfile[], model: ModelSpec): Pipeline[] {
  const copies = model.pipelines ?? 1;
  const nodes: Member[] = profiles
    .map((p) => ({ id: p.id, memoryGb: p.memoryGb, cap: capacityOf(p, model) }))
    .filter((n) => n.cap >= 1)
    .sort((a, b) => b.memoryGb - a.memoryGb || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const groups: Member[][] = Array.from({ length: copies }, () => []);
  const memory = new Array<number>(copies).fill(0);
  for (const n of nodes) {
    let best = 0;
    for (let g = 1; g < copies; g++) if ((memory[g] ?? 0) < (memory[best] ?? 0)) best = g;
    groups[best]?.push(n);
    memory[best] = (memory[best] ?? 0) + n.memoryGb;
  }
  return groups.map((group, copy) => ({ id: `${model.id}/${copy}`, modelId: model.id, stages: memoryWeighted(group, model) }));
}

function memoryWeighted(group: readonly Member[], model: ModelSpec): Stage[] {
  const layers = model.layers;
  const total = group.reduce((s, n) => s + n.memoryGb, 0);
  const counts: number[] = [];
  let cumulative = 0;
  let previousEnd = 0;
  for (const n of group) {
    cumulative += n.memoryGb;
    const end = Math.round((layers * cumulative) / total);
    counts.push(end - previousEnd);
    previousEnd = end;
  }
  // Rounding can ask a node for one layer more than it holds: pass the excess down the ring.
  let excess = 0;
  group.forEach((n, i) => {
    const want = (counts[i] ?? 0) + excess;
    counts[i] = Math.min(want, n.cap);
    excess = want - (counts[i] ?? 0);
  });
  for (let i = 0; excess > 0 && i < group.length; i++) {
    const room = (group[i]?.cap ?? 0) - (counts[i] ?? 0);
    const take = Math.min(room, excess);
    counts[i] = (counts[i] ?? 0) + take;
    excess -= take;
  }
  if (excess > 0) throw new Error(`exo-style: a copy of "${model.id}" cannot hold ${layers} layers (short by ${excess})`);
  const stages: Stage[] = [];
  let next = 0;
  group.forEach((n, i) => {
    const c = counts[i] ?? 0;
    if (c === 0) return;
    stages.push({ nodeId: n.id, layerStart: next, layerEnd: next + c });
    next += c;
  });
  return stages;
}
