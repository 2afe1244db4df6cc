/**
 * The balanced partition: every free node dealt to exactly `pipelines` disjoint copies, memory
 * repaired, then throughput improved by local search. The planner before short copies (kept as their baseline);
 * planSwarm falls back on it when greedy short copies strand memory a model needs.
 */
import { PlanError } from './errors.js';
import { byCapability, improvePartition, type Candidate } from './plan-search.js';
import type { ModelSpec } from './types.js';

const EPS = 1e-9;

/** What one layer takes, as a message says it: `1 GB`, or `0.5 GB + 0.25 GB KV reserve`. */
function footprint(model: ModelSpec): string {
  const kv = model.kvReserveGb ?? 0;
  return kv > 0 ? `${model.layerGb ?? 1} GB + ${kv} GB KV reserve` : `${model.layerGb ?? 1} GB`;
}

/**
 * Deals candidates to `copies` disjoint groups: fastest first, each to the group with the least
 * capability so far, then moves or swaps memory-rich nodes until every group can hold the model,
 * then improves the total throughput Σ 1 / T by local search ({@link improvePartition}).
 */
export function partitionCopies(candidates: readonly Candidate[], model: ModelSpec): Candidate[][] {
  const copies = model.pipelines ?? 1;
  const layers = model.layers;
  const totalCap = candidates.reduce((s, c) => s + Math.min(c.cap, layers), 0);
  const shortfall = (have: number) =>
    new PlanError(
      'InsufficientCapacity',
      `model "${model.id}" needs ${copies} disjoint ${copies === 1 ? 'copy' : 'copies'} of ${layers} layers ` +
        `(${copies * layers} layers of ${footprint(model)}) but the free memory holds ${have}: short by ${copies * layers - have} layers`,
    );
  if (candidates.length < copies) {
    // Disjoint copies need at least one node each: memory is not the missing thing, nodes are.
    throw new PlanError(
      'InsufficientCapacity',
      `model "${model.id}" needs ${copies} disjoint copies but only ${candidates.length} ${candidates.length === 1 ? 'node has' : 'nodes have'} ` +
        `free memory for a layer of ${footprint(model)}: short by ${copies - candidates.length} ${copies - candidates.length === 1 ? 'node' : 'nodes'}`,
    );
  }
  if (totalCap < copies * layers) throw shortfall(totalCap);

  const sorted = [...candidates].sort(byCapability);
  const groups: Candidate[][] = Array.from({ length: copies }, () => []);
  const scoreSum = new Array<number>(copies).fill(0);
  const capSum = new Array<number>(copies).fill(0);
  for (const c of sorted) {
    let best = 0;
    for (let g = 1; g < copies; g++) {
      if ((scoreSum[g] ?? 0) < (scoreSum[best] ?? 0) - EPS || (Math.abs((scoreSum[g] ?? 0) - (scoreSum[best] ?? 0)) <= EPS && (capSum[g] ?? 0) < (capSum[best] ?? 0))) best = g;
    }
    groups[best]?.push(c);
    scoreSum[best] = (scoreSum[best] ?? 0) + c.score;
    capSum[best] = (capSum[best] ?? 0) + Math.min(c.cap, layers);
  }
  const capOf = (g: readonly Candidate[]) => g.reduce((s, c) => s + Math.min(c.cap, layers), 0);

  // Memory repair: each step strictly raises a deficit group's capacity without making a donor short.
  for (let guard = 0; guard < candidates.length * copies * 4; guard++) {
    const deficit = groups.findIndex((g) => capOf(g) < layers);
    if (deficit === -1) break;
    const need = groups[deficit] as Candidate[];
    let moved = false;
    // 1. Move the most memory-per-score node a donor can spare.
    let bestMove: { donor: number; index: number; ratio: number } | undefined;
    groups.forEach((donor, d) => {
      if (d === deficit) return;
      const surplus = capOf(donor) - layers;
      donor.forEach((c, index) => {
        const cap = Math.min(c.cap, layers);
        if (cap > surplus || donor.length === 1) return;
        const ratio = cap / c.score;
        if (bestMove === undefined || ratio > bestMove.ratio + EPS) bestMove = { donor: d, index, ratio };
      });
    });
    if (bestMove !== undefined) {
      const [c] = (groups[bestMove.donor] as Candidate[]).splice(bestMove.index, 1);
      if (c) need.push(c);
      moved = true;
    } else {
      // 2. Swap a small node of the deficit group for a bigger one the donor can spare.
      let bestSwap: { donor: number; a: number; b: number; gain: number } | undefined;
      groups.forEach((donor, d) => {
        if (d === deficit) return;
        const surplus = capOf(donor) - layers;
        need.forEach((a, ai) => {
          donor.forEach((b, bi) => {
            const gain = Math.min(b.cap, layers) - Math.min(a.cap, layers);
            if (gain <= 0 || gain > surplus) return;
            if (bestSwap === undefined || gain > bestSwap.gain) bestSwap = { donor: d, a: ai, b: bi, gain };
          });
        });
      });
      if (bestSwap !== undefined) {
        const donor = groups[bestSwap.donor] as Candidate[];
        const a = need[bestSwap.a] as Candidate;
        const b = donor[bestSwap.b] as Candidate;
        need[bestSwap.a] = b;
        donor[bestSwap.b] = a;
        moved = true;
      }
    }
    if (!moved) break;
  }
  const short = groups.findIndex((g) => capOf(g) < layers);
  if (short !== -1) throw shortfall(groups.reduce((s, g) => s + Math.min(capOf(g), layers), 0));
  return improvePartition(groups, layers).map((g) => [...g].sort(byCapability));
}
