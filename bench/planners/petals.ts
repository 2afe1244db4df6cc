/**
 * Reference planner in the style of Petals (bigscience-workshop/petals, server block
 * selection), kept to disjoint copies so it answers the same question as planSwarm.
 *
 * Algorithm:
 * 1. Servers join one by one, fastest first (then more memory, then id).
 * 2. A server loads as many consecutive layers as its memory holds: min(floor(memoryGb /
 *    layerGb), layers) — in Petals the span length comes from memory, not from speed.
 * 3. It puts that span where the swarm is weakest: over every copy and every start, the window
 *    whose per-layer throughputs, sorted ascending, are lexicographically smallest (Petals'
 *    `_choose_best_start`; uncovered layers count 0, so gaps are filled first). A layer's
 *    throughput is the sum, over the servers holding it, of score / span length.
 * 4. Spans of one copy may overlap, as in Petals; the copy's pipeline is then the chain a
 *    Petals client would pick, made generous: the bottleneck-optimal one — the smallest T such
 *    that, walking the layers, each stage can be served by an unused server holding it, each
 *    server serving at most T · score layers of its span (greedy furthest reach per step).
 * @throws {Error} when some copy is left with a layer nobody holds.
 */
import type { ModelSpec, NodeProfile, Pipeline, Stage } from '../../src/index.js';
import { capacityOf } from './throughput.js';

interface Server {
  readonly id: string;
  readonly score: number;
  readonly start: number;
  readonly end: number;
}

const EPS = 1e-9;

/** Plans `model.pipelines` disjoint copies of one model the Petals way. */
export function planPetals(profiles: readonly NodeProfile[], model: ModelSpec): Pipeline[] {
  const copies = model.pipelines ?? 1;
  const layers = model.layers;
  const joining = profiles
    .map((p) => ({ id: p.id, score: p.score ?? 1, memoryGb: p.memoryGb, span: Math.min(capacityOf(p, model), layers) }))
    .filter((n) => n.span >= 1)
    .sort((a, b) => b.score - a.score || b.memoryGb - a.memoryGb || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const throughput: number[][] = Array.from({ length: copies }, () => new Array<number>(layers).fill(0));
  const servers: Server[][] = Array.from({ length: copies }, () => []);
  for (const n of joining) {
    let best: { copy: number; start: number; key: number[] } | undefined;
    for (let copy = 0; copy < copies; copy++) {
      const row = throughput[copy] as number[];
      for (let start = 0; start + n.span <= layers; start++) {
        const key = row.slice(start, start + n.span).sort((a, b) => a - b);
        if (best === undefined || lexicographicLess(key, best.key)) best = { copy, start, key };
      }
    }
    if (best === undefined) continue;
    const row = throughput[best.copy] as number[];
    for (let l = best.start; l < best.start + n.span; l++) row[l] = (row[l] ?? 0) + n.score / n.span;
    servers[best.copy]?.push({ id: n.id, score: n.score, start: best.start, end: best.start + n.span });
  }
  return servers.map((group, copy) => ({ id: `${model.id}/${copy}`, modelId: model.id, stages: bestChain(group, model) }));
}

function lexicographicLess(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x < y - EPS) return true;
    if (x > y + EPS) return false;
  }
  return a.length < b.length;
}

/** The chain through one copy's servers whose slowest stage is fastest. */
function bestChain(group: readonly Server[], model: ModelSpec): Stage[] {
  const times = new Set<number>();
  for (const s of group) for (let n = 1; n <= s.end - s.start; n++) times.add(n / s.score);
  const sorted = [...times].sort((a, b) => a - b);
  let lo = 0;
  let hi = sorted.length - 1;
  if (hi < 0 || chainAt(group, model.layers, sorted[hi] as number) === undefined) {
    throw new Error(`petals-style: a copy of "${model.id}" has layers no server holds`);
  }
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (chainAt(group, model.layers, sorted[mid] as number) !== undefined) hi = mid;
    else lo = mid + 1;
  }
  return chainAt(group, model.layers, sorted[lo] as number) as Stage[];
}

/** Walks the layers, each step taking the unused server that reaches furthest within time `t`. */
function chainAt(group: readonly Server[], layers: number, t: number): Stage[] | undefined {
  const used = new Set<string>();
  const stages: Stage[] = [];
  let pos = 0;
  while (pos < layers) {
    let pick: Server | undefined;
    let reach = pos;
    for (const s of group) {
      if (used.has(s.id) || s.start > pos || s.end <= pos) continue;
      const r = Math.min(s.end, pos + Math.floor(t * s.score + EPS));
      if (r > reach) {
        reach = r;
        pick = s;
      }
    }
    if (pick === undefined) return undefined;
    used.add(pick.id);
    stages.push({ nodeId: pick.id, layerStart: pos, layerEnd: reach });
    pos = reach;
  }
  return stages;
}
