/**
 * The layer split of one copy over its nodes (docs/cost.md "The cost of a copy"): water-filling
 * within each node's capacity.
 */
import { PlanError } from './errors.js';
import type { Candidate } from './plan-search.js';
import type { Stage } from './types.js';

const EPS = 1e-9;

/**
 * Splits `layers` over the nodes of one copy so that the slowest stage (layers / score) is as
 * fast as possible within each node's capacity: water-filling, one layer at a time to the node
 * whose stage stays fastest. Nodes that receive no layer are not stages.
 */
export function splitLayers(group: readonly Candidate[], layers: number): Stage[] {
  const counts = new Array<number>(group.length).fill(0);
  for (let l = 0; l < layers; l++) {
    let best = -1;
    let bestTime = Infinity;
    for (let i = 0; i < group.length; i++) {
      const c = group[i] as Candidate;
      const n = counts[i] ?? 0;
      if (n >= c.cap) continue;
      const time = (n + 1) / c.score;
      if (time < bestTime - EPS) {
        best = i;
        bestTime = time;
      }
    }
    if (best === -1) throw new PlanError('InsufficientCapacity', `a copy ran out of memory at layer ${l} of ${layers}`);
    counts[best] = (counts[best] ?? 0) + 1;
  }
  const stages: Stage[] = [];
  let next = 0;
  group.forEach((c, i) => {
    const n = counts[i] ?? 0;
    if (n === 0) return;
    stages.push({ nodeId: c.id, layerStart: next, layerEnd: next + n });
    next += n;
  });
  return stages;
}
