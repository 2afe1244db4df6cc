/**
 * Packed copies for a swarm of several models whose wanted copies outnumber what disjoint nodes
 * hold — small copies, each a fraction of a node (docs/cost.md "More wanted copies than disjoint
 * nodes hold"). A node may then host whole copies of several models: each wanted copy, the
 * largest first, goes whole onto the node with the most free memory, or, where no node's free
 * memory holds it, onto the fewest nodes with the most free memory (never a node that hosts a copy
 * of the same model: copies of one model stay disjoint). A copy whole on one node adds
 * no hop, and a node that hosts at least one copy is busy, so compute is counted once near the
 * bound. Every copy stays within twice the stages its own nodes' full memory needs (or its
 * `stageFactor`, if lower); the nodes no wanted copy uses form further copies of their own.
 */
import { fullCapacity, furtherDisjointCopies, layerFootprint } from './plan-disjoint.js';
import { byCapability, type Candidate } from './plan-search.js';
import { sharedThroughput } from './shared-throughput.js';
import { splitLayers } from './split-layers.js';
import type { ModelSpec, NodeProfile, Pipeline, Stage } from './types.js';

const EPS = 1e-9;

/** The most a packed copy may have of the stages its own nodes' full memory needs. */
export const PACKED_FACTOR = 2;

/** One copy the packed planner chose: the model and its stages. */
export interface PackedCopy {
  readonly model: ModelSpec;
  readonly stages: Stage[];
}

/**
 * Packed copies of every model: the wanted copies (`pipelines`), the largest copy first, each on
 * the nodes with the most free memory; then, unless `further` is false, further copies on the
 * nodes no wanted copy uses, by demand share (plan-disjoint.ts). Undefined when a wanted copy
 * finds no room within its stage bound (the caller then plans with shared nodes). Deterministic.
 * @param order the models in the order ties between them go (the base model first)
 */
export function packedCopies(profiles: readonly NodeProfile[], models: readonly ModelSpec[], order: readonly ModelSpec[], further: boolean): PackedCopy[] | undefined {
  const nodes = profiles.map((p) => ({ id: p.id, score: p.score ?? 1, memoryGb: p.memoryGb })).filter((p) => p.memoryGb > 0);
  const free = Float64Array.from(nodes, (n) => n.memoryGb);
  const index = new Map(nodes.map((n, i) => [n.id, i] as const));
  const busy = new Uint8Array(nodes.length);
  const heap = new FreeHeap(free, nodes.map((n) => n.score));
  for (let i = 0; i < nodes.length; i++) heap.push(i);
  const wanted: ModelSpec[] = [];
  for (const m of models) for (let k = 0; k < (m.pipelines ?? 1); k++) wanted.push(m);
  // The largest copies first (first fit decreasing): small copies fill the room large ones leave.
  const size = (m: ModelSpec) => m.layers * layerFootprint(m);
  wanted.sort((a, b) => size(b) - size(a) || models.indexOf(a) - models.indexOf(b));
  const placed = new Map<ModelSpec, Stage[][]>(models.map((m) => [m, []]));
  // A model's copies come one after another: the nodes that host one wait aside until the next
  // model's turn, since two copies of one model never share a node.
  let aside: number[] = [];
  let current: ModelSpec | undefined;
  for (const model of wanted) {
    if (model !== current) {
      for (const i of aside) heap.push(i);
      aside = [];
      current = model;
    }
    const kept = packOne(model, nodes, free, heap);
    if (kept === undefined) return undefined;
    for (const s of kept.stages) busy[index.get(s.nodeId) as number] = 1;
    aside.push(...kept.members);
    (placed.get(model) as Stage[][]).push(kept.stages);
  }
  const copies: PackedCopy[] = [];
  for (const m of models) for (const stages of placed.get(m) as Stage[][]) copies.push({ model: m, stages });
  if (!further) return copies;
  // Further copies on the idle nodes (their full memory), each model's wanted copies counted once.
  const idle = profiles.filter((p) => p.memoryGb > 0 && busy[index.get(p.id) as number] !== 1);
  if (idle.length === 0) return copies;
  const pipelines: Pipeline[] = copies.map((c, i) => ({ id: `${c.model.id}/${i}`, modelId: c.model.id, stages: c.stages }));
  const rate = sharedThroughput({ models, pipelines }, profiles).models;
  for (const { model, group } of furtherDisjointCopies(idle, order, rate)) copies.push({ model, stages: splitLayers([...group].sort(byCapability), model.layers) });
  return copies;
}

/**
 * One copy of `model` on the nodes of `heap` with the most free memory: the first alone when it
 * holds the model, else the fewest of them that do (a minimal cover: members it can spare go back,
 * smallest first). Returns its stages and its members, which leave the heap (their free memory
 * updated); undefined, the heap as it was, when they cannot hold it or the copy would exceed its
 * stage bound.
 */
function packOne(model: ModelSpec, nodes: readonly { id: string; score: number; memoryGb: number }[], free: Float64Array, heap: FreeHeap): { stages: Stage[]; members: number[] } | undefined {
  const gb = layerFootprint(model);
  const popped: number[] = [];
  const capOf = (i: number) => Math.min(model.layers, Math.floor((free[i] as number) / gb + EPS));
  let held = 0;
  while (held < model.layers && heap.size > 0) {
    const i = heap.pop();
    popped.push(i);
    if (capOf(i) === 0) break;
    held += capOf(i);
  }
  const keep = popped.filter((i) => capOf(i) > 0);
  const back = (members: readonly number[]) => {
    for (const i of popped) if (!members.includes(i)) heap.push(i);
  };
  if (held < model.layers) {
    back([]);
    return undefined;
  }
  for (const i of [...keep].sort((a, b) => capOf(a) - capOf(b) || b - a)) {
    if (held - capOf(i) >= model.layers) {
      held -= capOf(i);
      keep.splice(keep.indexOf(i), 1);
    }
  }
  const group: Candidate[] = keep.map((i) => ({ id: (nodes[i] as { id: string }).id, score: (nodes[i] as { score: number }).score, cap: capOf(i) }));
  const stages = splitLayers(group.sort(byCapability), model.layers);
  const full = fullStages(keep.map((i) => fullCapacity((nodes[i] as { memoryGb: number }).memoryGb, model)), model.layers);
  if (stages.length > Math.min(PACKED_FACTOR, model.stageFactor ?? PACKED_FACTOR) * full) {
    back([]);
    return undefined;
  }
  const at = new Map(keep.map((i) => [(nodes[i] as { id: string }).id, i] as const));
  const members = stages.map((s) => at.get(s.nodeId) as number);
  stages.forEach((s, k) => {
    const i = members[k] as number;
    free[i] = (free[i] as number) - (s.layerEnd - s.layerStart) * gb;
  });
  back(members);
  return { stages, members };
}

/** The fewest of `caps`, largest first, that hold `layers` (Infinity if none). */
function fullStages(caps: number[], layers: number): number {
  caps.sort((a, b) => b - a);
  let held = 0;
  for (let k = 0; k < caps.length; k++) {
    held += caps[k] as number;
    if (held >= layers) return k + 1;
  }
  return Number.POSITIVE_INFINITY;
}

/** A binary max-heap of node indices by free memory; ties: the faster node, then the lower index. */
class FreeHeap {
  private readonly items: number[] = [];

  constructor(
    private readonly free: Float64Array,
    private readonly score: readonly number[],
  ) {}

  get size(): number {
    return this.items.length;
  }

  push(node: number): void {
    const items = this.items;
    let at = items.length;
    items.push(node);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.before(node, items[parent] as number)) break;
      items[at] = items[parent] as number;
      at = parent;
    }
    items[at] = node;
  }

  pop(): number {
    const items = this.items;
    const top = items[0] as number;
    const last = items.pop() as number;
    if (items.length === 0) return top;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= items.length) break;
      if (child + 1 < items.length && this.before(items[child + 1] as number, items[child] as number)) child++;
      if (!this.before(items[child] as number, last)) break;
      items[at] = items[child] as number;
      at = child;
    }
    items[at] = last;
    return top;
  }

  private before(a: number, b: number): boolean {
    const fa = this.free[a] as number;
    const fb = this.free[b] as number;
    if (Math.abs(fa - fb) > EPS) return fa > fb;
    const sa = this.score[a] as number;
    const sb = this.score[b] as number;
    return sa > sb || (sa === sb && a < b);
  }
}
