/**
 * Short copies: the planner counts hops. A copy is built from the fastest free nodes until it can
 * hold the model, then a further node joins only when what it saves in stage time is worth more
 * than the hop it adds ({@link HOP_SHARE}); the nodes it leaves form further copies or wait as
 * spares. docs/cost.md explains the model.
 */
import { byCapability, WaterFill, type Candidate } from './plan-search.js';

/**
 * What one hop costs in the planner, as a share of throughput (5%): a node joins a copy being
 * built only when it raises the copy's throughput (1 / slowest stage) by more than
 * `(1 + HOP_SHARE) × score / layers` — what it would add in a balanced copy of its own, plus the
 * hop — and a spare that can form no copy joins one only when it cuts its slowest stage by more
 * than `HOP_SHARE` (planSwarm).
 */
export const HOP_SHARE = 0.05;

/** The fewest of `members`, largest capacity first, whose capacity holds `layers` (Infinity if none). */
export function memoryStages(members: readonly number[], cap: Int32Array, layers: number): number {
  const caps = members.map((m) => cap[m] as number).sort((a, b) => b - a);
  let held = 0;
  for (let k = 0; k < caps.length; k++) {
    held += caps[k] as number;
    if (held >= layers) return k + 1;
  }
  return Number.POSITIVE_INFINITY;
}

/** {@link memoryStages} of candidates: the fewest of `group`, largest capacity first, that hold `layers`. */
export function memoryStagesOf(group: readonly Candidate[], layers: number): number {
  return memoryStages(group.map((_, i) => i), boundCaps(group, layers), layers);
}

/** What a stage bound reads of each candidate: its full memory's layers where known, else its capacity. */
function boundCaps(group: readonly Candidate[], layers: number): Int32Array {
  return Int32Array.from(group, (c) => Math.min(c.full ?? c.cap, layers));
}

/**
 * Drops members, the slowest first, until the copy has at most `factor` times its memory stages
 * (read in `bound`: each member's full memory on several models, else `cap`);
 * a member stays when the rest would not hold the model. One pass, slowest to fastest (`members`
 * are indices into a list sorted fastest first): a member that cannot leave never can later, since
 * each removal only lowers what the rest hold. The slowest members take the fewest layers in a
 * water-filled copy, so they cost it least; a large slow node that alone sets the bound leaves
 * first when the fast ones hold the model without it.
 */
function trimToFactor(members: number[], cap: Int32Array, layers: number, factor: number, bound: Int32Array = cap): void {
  let held = members.reduce((s, m) => s + (cap[m] as number), 0);
  for (let k = members.length - 1; k >= 0 && members.length > factor * memoryStages(members, bound, layers); k--) {
    const c = cap[members[k] as number] as number;
    if (held - c < layers) continue;
    held -= c;
    members.splice(k, 1);
  }
}

/**
 * `group` kept to `factor` times its memory stages, the slowest members leaving first (see
 * {@link trimToFactor}); the same group when it already is. Deterministic.
 */
export function withinFactor(group: readonly Candidate[], layers: number, factor: number): Candidate[] {
  const sorted = [...group].sort(byCapability);
  const members = sorted.map((_, i) => i);
  trimToFactor(members, Int32Array.from(sorted, (c) => Math.min(c.cap, layers)), layers, factor, boundCaps(sorted, layers));
  return members.length === group.length ? [...group] : members.map((m) => sorted[m] as Candidate);
}

/** Consecutive candidates a copy may reject before it stops looking (keeps 1,000 nodes in milliseconds). */
const MAX_MISSES = 6;

/**
 * Builds up to `limit` disjoint short copies of a model of `layers` layers from `candidates`,
 * fastest first: each copy takes the fastest unused nodes until their memory holds the model,
 * then admits a further node only when that raises the copy's throughput by more than the node
 * would add in a balanced copy of its own, plus one hop's worth. Every member takes a layer.
 * Deterministic: candidates are taken in {@link byCapability} order.
 *
 * @returns the copies' nodes (each group holds the model); fewer than `limit` when memory runs out
 */
export function shortCopies(candidates: readonly Candidate[], layers: number, limit = Number.POSITIVE_INFINITY, stageFactor?: number): Candidate[][] {
  const nodes = [...candidates].sort(byCapability);
  const n = nodes.length;
  const cap = Int32Array.from(nodes, (c) => Math.min(c.cap, layers));
  const bound = boundCaps(nodes, layers);
  const score = Float64Array.from(nodes, (c) => c.score);
  const fill = new WaterFill(score, cap, layers);
  const used = new Uint8Array(n);
  let freeCap = cap.reduce((s, c) => s + c, 0);
  const groups: Candidate[][] = [];
  let first = 0;
  while (groups.length < limit && freeCap >= layers) {
    while (first < n && used[first] === 1) first++;
    // 1. Memory: the fastest unused nodes until they hold the model.
    const members: number[] = [];
    let held = 0;
    let speed = 0;
    for (let i = first; i < n && held < layers; i++) {
      if (used[i] === 1) continue;
      members.push(i);
      held += cap[i] as number;
      speed += score[i] as number;
    }
    if (held < layers) break;
    // A stage bound: the fastest nodes can be many small ones, so the slowest members leave
    // while the rest hold the model.
    if (stageFactor !== undefined) {
      trimToFactor(members, cap, layers, stageFactor, bound);
      speed = members.reduce((s, m) => s + (score[m] as number), 0);
    }
    let time = fill.time([...members].sort((a, b) => a - b), -1, -1, false);
    // 2. Speed: a slower node joins only when it is worth its hop.
    let misses = 0;
    for (let i = (members[members.length - 1] as number) + 1; i < n && misses < MAX_MISSES; i++) {
      if (used[i] === 1) continue;
      // Its first layer alone would not cut the slowest stage: neither would any slower node's.
      if (1 / (score[i] as number) >= time) break;
      if (stageFactor !== undefined && members.length + 1 > stageFactor * memoryStages([...members, i], bound, layers)) {
        misses++;
        continue;
      }
      // What the node adds here must beat what it adds in a balanced copy of its own (score /
      // layers) by a hop's worth: joining a copy whose stages are balanced only lengthens it.
      const bar = ((1 + HOP_SHARE) * (score[i] as number)) / layers;
      // No split beats the copy's compute bound (Σ score / layers): skip the water-fill when even that falls short.
      if ((speed + (score[i] as number)) / layers - 1 / time <= bar) {
        misses++;
        continue;
      }
      const with_ = fill.time(members, -1, i, false);
      if (1 / with_ - 1 / time > bar) {
        members.push(i);
        held += cap[i] as number;
        speed += score[i] as number;
        time = with_;
        misses = 0;
      } else misses++;
    }
    // Every member takes a layer: a joiner only when its first layer beats the slowest stage, and
    // the memory phase's nodes are the fastest (or the memory the copy needs).
    const group = members;
    for (const m of group) {
      used[m] = 1;
      freeCap -= cap[m] as number;
    }
    groups.push(group.map((m) => nodes[m] as Candidate));
  }
  return groups;
}
