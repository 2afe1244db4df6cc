/**
 * Disjoint copies for a swarm that serves several models (docs/cost.md "Several models: disjoint
 * copies"): each node in at most one copy of one model, so no node's compute is split between
 * copies and every copy can reach its own compute bound. Nodes are taken in order of speed per
 * GB; a copy takes the next nodes until their full memory holds the model, then gives back the
 * members it can spare (the smallest first) so that its stages are exactly the stages its own
 * memory needs. Neighbours in that order have about the same speed per GB, so the layers split in
 * proportion to speed fit their memory and the copy runs at about Σ score / layers.
 */
import { byCapability, WaterFill, type Candidate } from './plan-search.js';
import type { ModelSpec, NodeProfile } from './types.js';

const EPS = 1e-9;

/** Memory one layer of `model` takes on a node: its weights plus its KV reserve, in GB. */
export function layerFootprint(model: ModelSpec): number {
  return (model.layerGb ?? 1) + (model.kvReserveGb ?? 0);
}

/** Layers of `model` a node of `memoryGb` can hold (its full memory), at most the model's layers. */
export function fullCapacity(memoryGb: number, model: ModelSpec): number {
  return Math.min(model.layers, Math.max(0, Math.floor(memoryGb / layerFootprint(model) + EPS)));
}

/** One copy the disjoint planner chose: the model and its nodes (capacity = full memory). */
export interface DisjointCopy {
  readonly model: ModelSpec;
  readonly group: Candidate[];
}

/**
 * Disjoint copies of every model: first each model's wanted copies (`pipelines`, in model
 * order), then, unless `further` is false, further copies from the nodes left, each to the model
 * with the least throughput per wanted copy so far (its demand share), until no model fits.
 * Undefined when the wanted copies do not fit on disjoint nodes (the caller then plans with
 * shared nodes). Deterministic.
 * @param order the models in the order ties between them go (the base model first)
 */
export function disjointCopies(profiles: readonly NodeProfile[], models: readonly ModelSpec[], order: readonly ModelSpec[], further: boolean): DisjointCopy[] | undefined {
  // Wanted copies in model order; when they do not fit, the largest copies first (fewer large
  // nodes left stranded), before the caller gives up on disjoint nodes.
  const largestFirst = [...models].sort((a, b) => b.layers * layerFootprint(b) - a.layers * layerFootprint(a) || models.indexOf(a) - models.indexOf(b));
  return cutCopies(profiles, models, order, further) ?? cutCopies(profiles, largestFirst, order, further);
}

/**
 * Further copies only, on `profiles` (nodes no copy uses), by demand share from `rate`: each
 * model's throughput so far (its wanted copies' elsewhere), until no model fits. Deterministic.
 */
export function furtherDisjointCopies(profiles: readonly NodeProfile[], order: readonly ModelSpec[], rate: ReadonlyMap<string, number>): DisjointCopy[] {
  return cutCopies(profiles, [], order, true, rate) ?? [];
}

function cutCopies(profiles: readonly NodeProfile[], models: readonly ModelSpec[], order: readonly ModelSpec[], further: boolean, start?: ReadonlyMap<string, number>): DisjointCopy[] | undefined {
  const nodes = profiles
    .map((p) => ({ id: p.id, score: p.score ?? 1, memoryGb: p.memoryGb }))
    .filter((p) => p.memoryGb > 0)
    .sort((a, b) => b.score / b.memoryGb - a.score / a.memoryGb || b.memoryGb - a.memoryGb || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const used = new Uint8Array(nodes.length);
  const copies: DisjointCopy[] = [];
  let left = nodes.reduce((s, n) => s + n.memoryGb, 0);
  let first = 0;

  /** The next copy of `model` from the unused nodes in order, or undefined when they cannot hold it. */
  const cut = (model: ModelSpec): Candidate[] | undefined => {
    if (left + EPS < model.layers * layerFootprint(model)) return undefined;
    while (first < nodes.length && used[first] === 1) first++;
    const members: number[] = [];
    let held = 0;
    for (let i = first; i < nodes.length && held < model.layers; i++) {
      if (used[i] === 1) continue;
      const cap = fullCapacity((nodes[i] as (typeof nodes)[number]).memoryGb, model);
      if (cap === 0) continue;
      members.push(i);
      held += cap;
    }
    if (held < model.layers) return undefined;
    // Give back what the copy can spare, smallest first (then slowest): a minimal cover has
    // exactly the stages its own memory needs, largest first.
    const capOf = (i: number) => fullCapacity((nodes[i] as (typeof nodes)[number]).memoryGb, model);
    const spare = [...members].sort((a, b) => capOf(a) - capOf(b) || (nodes[a] as (typeof nodes)[number]).score - (nodes[b] as (typeof nodes)[number]).score || b - a);
    const keep = new Set(members);
    for (const i of spare) {
      if (held - capOf(i) >= model.layers) {
        held -= capOf(i);
        keep.delete(i);
      }
    }
    const group: Candidate[] = [];
    for (const i of members) {
      if (!keep.has(i)) continue;
      used[i] = 1;
      const n = nodes[i] as (typeof nodes)[number];
      left -= n.memoryGb;
      group.push({ id: n.id, score: n.score, cap: capOf(i) });
    }
    return group;
  };

  const rate = new Map<string, number>(order.map((m) => [m.id, start?.get(m.id) ?? 0] as const));
  const add = (model: ModelSpec, group: Candidate[]) => {
    copies.push({ model, group });
    rate.set(model.id, (rate.get(model.id) ?? 0) + copyRate(group, model.layers));
  };
  // Each copy takes a node of its own: more wanted copies than nodes never fit.
  if (models.reduce((s, m) => s + (m.pipelines ?? 1), 0) > nodes.length) return undefined;
  for (const model of models) {
    for (let k = 0; k < (model.pipelines ?? 1); k++) {
      const group = cut(model);
      if (group === undefined) return undefined;
      copies.push({ model, group });
    }
  }
  if (!further) return copies;
  for (const { model, group } of copies) rate.set(model.id, (rate.get(model.id) ?? 0) + copyRate(group, model.layers));
  // Further copies by demand share: the next goes to the model with the least throughput per
  // wanted copy (ties: `order`, the base model first), until no model fits in the nodes left.
  const active = [...order];
  while (active.length > 0) {
    let best = active[0] as ModelSpec;
    for (const m of active) if (perWanted(m, rate) < perWanted(best, rate) * (1 - EPS)) best = m;
    const group = cut(best);
    if (group === undefined) active.splice(active.indexOf(best), 1);
    else add(best, group);
  }
  return copies;
}

/** A model's throughput so far per wanted copy. */
function perWanted(model: ModelSpec, rate: ReadonlyMap<string, number>): number {
  return (rate.get(model.id) ?? 0) / (model.pipelines ?? 1);
}

/** The rate of a copy on `group` alone: 1 / its slowest stage after water-filling. */
function copyRate(group: readonly Candidate[], layers: number): number {
  const sorted = [...group].sort(byCapability);
  const fill = new WaterFill(Float64Array.from(sorted, (c) => c.score), Int32Array.from(sorted, (c) => Math.min(c.cap, layers)), layers);
  return 1 / fill.time(sorted.map((_, i) => i), -1, -1, false);
}
