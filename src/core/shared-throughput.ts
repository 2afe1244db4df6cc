/**
 * A plan's throughput with every node's compute counted once (docs/cost.md "Counted once"). A
 * node that holds stages of several copies — of one model or of several — runs them on one
 * processor: its speed (`score`, layer-passes per unit of time) is shared between them. The
 * figure is the max-min fair allocation of each node's speed across its stages: every copy's
 * rate rises together until some node is saturated, the copies through that node stop there, and
 * the others rise on (progressive filling). A copy on nodes of its own reaches 1 / its slowest
 * stage, as before; a copy on shared nodes gets its share. Pure; no platform imports.
 */
import type { ModelSpec, NodeProfile, SwarmPlan } from './types.js';

/** Counted-once throughput of a plan (plain data). */
export interface SharedThroughput {
  /** Each copy's rate (copies of the model per unit of time), by pipeline id, in plan order. */
  readonly copies: ReadonlyMap<string, number>;
  /** Each model's throughput: the sum of its copies' rates, by model id, in plan order. */
  readonly models: ReadonlyMap<string, number>;
  /** Σ over models of (throughput × layers): the layer-passes the plan runs; never above Σ score. */
  readonly layerRate: number;
  /** Σ score over the nodes with memory for one layer of some model: what no plan can exceed. */
  readonly bound: number;
}

/** Options of {@link sharedThroughput}. */
export interface SharedThroughputOptions {
  /** Pipelines that count (the others get rate 0): e.g. only the intact copies. @defaultValue every pipeline */
  readonly include?: (pipelineId: string) => boolean;
}

/**
 * The counted-once throughput of `plan` on `profiles` (docs/cost.md "Counted once"). A node's
 * score is its profile's (default 1); a node missing from `profiles` has no speed, so a copy
 * through it gets rate 0. Deterministic; O(stages · log nodes).
 * @example sharedThroughput(planSwarm(nodes, config), nodes).layerRate / sharedThroughput(…).bound
 */
export function sharedThroughput(plan: SwarmPlan, profiles: readonly NodeProfile[], options: SharedThroughputOptions = {}): SharedThroughput {
  const nodeIndex = new Map<string, number>();
  const speed: number[] = [];
  for (const p of profiles) {
    if (nodeIndex.has(p.id)) continue;
    nodeIndex.set(p.id, speed.length);
    speed.push(p.score ?? 1);
  }
  const layersOf = new Map(plan.models.map((m) => [m.id, m.layers] as const));
  // Copies as (node, layers) lists; a node listed twice in one copy counts its layers together.
  const counted = plan.pipelines.filter((p) => options.include === undefined || options.include(p.id));
  const copyNodes: number[][] = [];
  const copyLayers: number[][] = [];
  const nodeCopies: number[][] = speed.map(() => []);
  const dead = new Uint8Array(counted.length);
  counted.forEach((p, c) => {
    const at = new Map<number, number>();
    const ns: number[] = [];
    const ls: number[] = [];
    for (const s of p.stages) {
      const n = nodeIndex.get(s.nodeId);
      if (n === undefined) {
        dead[c] = 1;
        continue;
      }
      const k = at.get(n);
      if (k === undefined) {
        at.set(n, ns.length);
        ns.push(n);
        ls.push(s.layerEnd - s.layerStart);
        (nodeCopies[n] as number[]).push(c);
      } else ls[k] = (ls[k] as number) + s.layerEnd - s.layerStart;
    }
    copyNodes.push(ns);
    copyLayers.push(ls);
  });
  const rate = progressiveFill(speed, copyNodes, copyLayers, nodeCopies, dead);
  const copies = new Map<string, number>();
  const models = new Map<string, number>(plan.models.map((m) => [m.id, 0] as const));
  counted.forEach((p, c) => copies.set(p.id, rate[c] as number));
  for (const p of plan.pipelines) if (!copies.has(p.id)) copies.set(p.id, 0);
  const ordered = new Map(plan.pipelines.map((p) => [p.id, copies.get(p.id) ?? 0] as const));
  let layerRate = 0;
  for (const p of plan.pipelines) {
    const r = ordered.get(p.id) ?? 0;
    models.set(p.modelId, (models.get(p.modelId) ?? 0) + r);
  }
  for (const [id, t] of models) layerRate += t * (layersOf.get(id) ?? 0);
  return { copies: ordered, models, layerRate, bound: computeBound(profiles, plan.models) };
}

/**
 * Σ score over the nodes that can hold one layer of some model (memory per layer: `layerGb` plus
 * `kvReserveGb`): the layer-passes per unit of time of the whole swarm, which no plan exceeds.
 */
export function computeBound(profiles: readonly NodeProfile[], models: readonly ModelSpec[]): number {
  const smallest = Math.min(...models.map((m) => (m.layerGb ?? 1) + (m.kvReserveGb ?? 0)));
  let sum = 0;
  const seen = new Set<string>();
  for (const p of profiles) {
    if (seen.has(p.id)) continue;
    seen.add(p.id);
    if (p.memoryGb + 1e-9 >= smallest) sum += p.score ?? 1;
  }
  return sum;
}

/**
 * Progressive filling: every unfrozen copy's rate rises together; a node saturates when its
 * frozen copies' use plus the level times its unfrozen layers reaches its speed; the copies
 * through the first node to saturate freeze at the level. A lazy heap of saturation levels keeps
 * it O(stages · log nodes). A copy through an unknown node (`dead`) has rate 0.
 */
function progressiveFill(speed: readonly number[], copyNodes: readonly number[][], copyLayers: readonly number[][], nodeCopies: readonly number[][], dead: Uint8Array): Float64Array {
  const n = speed.length;
  const rate = new Float64Array(copyNodes.length);
  const frozen = new Uint8Array(copyNodes.length);
  const used = new Float64Array(n);
  const open = new Float64Array(n);
  copyNodes.forEach((ns, c) => {
    if (dead[c] === 1) {
      frozen[c] = 1;
      return;
    }
    ns.forEach((v, k) => (open[v] = (open[v] as number) + (copyLayers[c]?.[k] as number)));
  });
  const level = (v: number) => ((open[v] as number) > 0 ? Math.max(0, (speed[v] as number) - (used[v] as number)) / (open[v] as number) : Number.POSITIVE_INFINITY);
  const heap = new LevelHeap();
  const version = new Uint32Array(n);
  for (let v = 0; v < n; v++) if ((open[v] as number) > 0) heap.push(level(v), v, 0);
  while (heap.size > 0) {
    const top = heap.pop();
    if (top.version !== version[top.node]) continue;
    const t = top.level;
    for (const c of nodeCopies[top.node] as number[]) {
      if (frozen[c] === 1) continue;
      frozen[c] = 1;
      rate[c] = t;
      const ns = copyNodes[c] as number[];
      const ls = copyLayers[c] as number[];
      ns.forEach((v, k) => {
        used[v] = (used[v] as number) + (ls[k] as number) * t;
        open[v] = (open[v] as number) - (ls[k] as number);
        if ((open[v] as number) < 1e-12) open[v] = 0;
        version[v] = (version[v] as number) + 1;
        if ((open[v] as number) > 0) heap.push(level(v), v, version[v] as number);
      });
    }
  }
  return rate;
}

/** A binary min-heap of (level, node, version); ties go to the smaller node index (determinism). */
class LevelHeap {
  private readonly items: { level: number; node: number; version: number }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(level: number, node: number, version: number): void {
    const items = this.items;
    const item = { level, node, version };
    let at = items.length;
    items.push(item);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.less(item, items[parent] as typeof item)) break;
      items[at] = items[parent] as typeof item;
      at = parent;
    }
    items[at] = item;
  }

  pop(): { level: number; node: number; version: number } {
    const items = this.items;
    const top = items[0] as { level: number; node: number; version: number };
    const last = items.pop() as typeof top;
    if (items.length === 0) return top;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= items.length) break;
      if (child + 1 < items.length && this.less(items[child + 1] as typeof top, items[child] as typeof top)) child++;
      if (!this.less(items[child] as typeof top, last)) break;
      items[at] = items[child] as typeof top;
      at = child;
    }
    items[at] = last;
    return top;
  }

  private less(a: { level: number; node: number }, b: { level: number; node: number }): boolean {
    return a.level < b.level || (a.level === b.level && a.node < b.node);
  }
}
