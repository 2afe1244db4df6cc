import { DEFAULT_COST_MODEL, DEFAULT_PENALTIES, DEFAULT_WEIGHTS, hopsCost, nodeCost, stageShare, type ExtraLoad } from '../core/cost.js';
import { planIndex } from '../core/plan-index.js';
import type { NodeStates, Pipeline, SwarmPlan } from '../core/types.js';

/** One node of the plan as the index sees it. */
interface NodeEntry {
  readonly id: string;
  alive: boolean;
  /** Its detector suspects it: its pipelines rank after those without a suspect (docs/detection.md). */
  suspect: boolean;
  /** Already queued for the next flush (so a report on a queued node skips the queue). */
  dirty: boolean;
  /** The model slots, pipeline indices and stage indices it appears in, one entry per stage. */
  readonly slots: ModelSlot[];
  readonly pipes: number[];
  readonly stages: number[];
}

/** One model's pipelines, their chain costs and a tournament tree over them. */
interface ModelSlot {
  readonly pipelines: readonly Pipeline[];
  /** Each pipeline's stage nodes, in stage order (the order `chainCost` sums in). */
  readonly stageNodes: readonly (readonly NodeEntry[])[];
  /** Where pipeline i's stages start in `shares` and `stageCost` (all stages of the model, flat). */
  readonly offset: Int32Array;
  /** Each stage's share of the model (layer-aware cost), pipeline by pipeline, in stage order. */
  readonly shares: Float64Array;
  /**
   * Each pipeline's stage costs, cached: with the layer-aware cost a node's cost depends on the
   * layers its stage holds, so the cache is per (pipeline, stage), not per node.
   */
  readonly stageCost: Float64Array;
  /** The hops term of each pipeline (constant: it depends on the stage count only). */
  readonly hops: Float64Array;
  /** Chain cost (nodes + hops, default weights) of each pipeline, by index. */
  readonly chain: Float64Array;
  /** Ranking key of each pipeline: its chain cost when intact, Infinity when any node is down. */
  readonly key: Float64Array;
  /** 1 when an intact pipeline has a suspect node: it ranks after every intact one without. */
  readonly suspect: Uint8Array;
  /** Tournament tree: tree[1] is the winner's index; leaves start at `size`. -1 = empty. */
  readonly tree: Int32Array;
  readonly size: number;
}

/**
 * The per-model routing index (docs/design.md §10): for the default weights, each model's cheapest intact
 * pipeline is kept in a tournament tree updated when a node's telemetry, liveness or in-flight
 * load changes, so a route costs O(1) and a telemetry update O(stages + log pipelines) for each
 * pipeline the node is in — independent of swarm size.
 *
 * It chooses exactly what the scan (`routeRequest`) would, with a bit-identical cost: each
 * stage's cost is the scan's own `nodeCost` call with the same arguments (the node's telemetry
 * and in-flight load, the stage's share of the model), cached per (pipeline, stage) until that
 * node changes; a pipeline's chain is those costs summed in stage order from 0, plus `hopsCost`,
 * as `chainCost` does; ties go to the lower index, and pipelines are sorted by id.
 */
export class RouterIndex {
  private readonly slots = new Map<string, ModelSlot>();
  private readonly entries = new Map<string, NodeEntry>();
  /**
   * Nodes whose telemetry, liveness or in-flight load changed since the last query. Telemetry
   * arrives far more often than routes are asked for, so updates are coalesced: a burst of reports
   * costs one re-rank per node, paid by the next query.
   */
  private readonly dirty: NodeEntry[] = [];
  /**
   * Most nodes changed since the last query: the next one re-reads every node and rebuilds the
   * ranking in one pass, and until then a report does not even look its node up.
   */
  private allDirty = false;

  constructor(
    plan: SwarmPlan,
    private readonly nodes: NodeStates,
    private readonly extra: ExtraLoad,
  ) {
    const index = planIndex(plan);
    for (const [modelId, pipelines] of index.pipelinesByModel) {
      let size = 1;
      while (size < pipelines.length) size *= 2;
      const layers = index.models.get(modelId)?.layers ?? 1;
      const slot: ModelSlot = {
        pipelines,
        stageNodes: pipelines.map((p) => p.stages.map((s) => this.entry(s.nodeId))),
        offset: offsets(pipelines),
        shares: Float64Array.from(pipelines.flatMap((p) => p.stages.map((s) => stageShare(s, layers, DEFAULT_COST_MODEL)))),
        stageCost: new Float64Array(pipelines.reduce((n, p) => n + p.stages.length, 0)),
        hops: Float64Array.from(pipelines, (p) => hopsCost(p.stages.length, DEFAULT_WEIGHTS)),
        chain: new Float64Array(pipelines.length),
        key: new Float64Array(pipelines.length),
        suspect: new Uint8Array(pipelines.length),
        tree: new Int32Array(2 * size).fill(-1),
        size,
      };
      this.slots.set(modelId, slot);
      slot.stageNodes.forEach((entries, i) => {
        entries.forEach((e, k) => {
          e.slots.push(slot);
          e.pipes.push(i);
          e.stages.push(k);
        });
        slot.tree[size + i] = i;
      });
    }
    this.rebuild();
  }

  /** The cheapest intact pipeline of a model and its chain cost, or undefined if none is intact. */
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined {
    if (this.dirty.length > 0) this.flush();
    const slot = this.slots.get(modelId);
    if (slot === undefined) return undefined;
    const i = slot.tree[1] ?? -1;
    if (i < 0 || (slot.key[i] ?? Infinity) === Infinity) return undefined;
    return { pipeline: slot.pipelines[i] as Pipeline, chain: slot.chain[i] ?? Infinity };
  }

  /**
   * The cheapest intact pipeline of a model among those that do not use `nodeId`: the copy a
   * failover of that node takes. O(k·log P) for the k pipelines of the model holding the node.
   */
  bestWithout(modelId: string, nodeId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined {
    if (this.dirty.length > 0) this.flush(); // before hiding: a flush re-keys every changed pipeline
    const slot = this.slots.get(modelId);
    const e = this.entries.get(nodeId);
    if (slot === undefined) return undefined;
    const hidden: number[] = [];
    if (e !== undefined) e.slots.forEach((s, j) => s === slot && hidden.push(e.pipes[j] as number));
    const saved = hidden.map((i) => slot.key[i] as number);
    for (const i of hidden) this.rekey(slot, i, Infinity);
    const best = this.best(modelId);
    hidden.forEach((i, j) => this.rekey(slot, i, saved[j] as number));
    return best;
  }

  /**
   * Visits the intact pipelines of a model whose chain cost `keep(chain)` accepts (asked again at
   * each subtree, so a caller can tighten it; it must accept every chain below one it accepts),
   * pruning every subtree whose cheapest it refuses: O(k·log P) for k visited, in index order.
   * Pipelines with a suspect node are visited only with `suspects` (the caller's best has one, so
   * every intact pipeline has one).
   */
  visitBelow(modelId: string, suspects: boolean, keep: (chain: number) => boolean, visit: (pipeline: Pipeline, chain: number) => void): void {
    if (this.dirty.length > 0) this.flush();
    const slot = this.slots.get(modelId);
    if (slot === undefined) return;
    const stack = [1];
    while (stack.length > 0) {
      const k = stack.pop() as number;
      const w = slot.tree[k] ?? -1;
      if (w < 0) continue;
      const key = slot.key[w] as number;
      // The subtree's winner is its cheapest intact pipeline without a suspect, if it has one.
      if (key === Infinity || (!suspects && slot.suspect[w] === 1) || !keep(key)) continue;
      if (k >= slot.size) visit(slot.pipelines[w] as Pipeline, slot.chain[w] as number);
      else stack.push(2 * k + 1, 2 * k);
    }
  }

  private rekey(slot: ModelSlot, i: number, key: number): void {
    slot.key[i] = key;
    const tree = slot.tree;
    for (let k = (slot.size + i) >> 1; k >= 1; k >>= 1) tree[k] = winner(slot, tree[2 * k] ?? -1, tree[2 * k + 1] ?? -1);
  }

  /** Notes that a node's telemetry, liveness or in-flight load changed; the next query re-ranks. */
  nodeChanged(nodeId: string): void {
    if (this.allDirty) return;
    const e = this.entries.get(nodeId);
    // Queued once until the next flush: reports between two routes do not grow or probe the queue.
    if (e !== undefined && !e.dirty) {
      e.dirty = true;
      this.dirty.push(e);
      if (this.dirty.length * 2 > this.entries.size) this.allDirty = true;
    }
  }

  /** Re-reads every changed node and re-ranks the pipelines it is in. */
  private flush(): void {
    if (this.allDirty) {
      this.dirty.length = 0;
      this.allDirty = false;
      this.rebuild();
      return;
    }
    for (const e of this.dirty) {
      this.reread(e);
      const { slots, pipes, stages } = e;
      for (let j = 0; j < slots.length; j++) {
        const slot = slots[j] as ModelSlot;
        const i = pipes[j] as number;
        this.price(slot, i, stages[j] as number, e);
        this.refresh(slot, i);
        const tree = slot.tree;
        for (let k = (slot.size + i) >> 1; k >= 1; k >>= 1) {
          tree[k] = winner(slot, tree[2 * k] ?? -1, tree[2 * k + 1] ?? -1);
        }
      }
    }
    this.dirty.length = 0;
  }

  /** Every node re-read, every stage re-priced, every ranking rebuilt bottom-up: O(stages + pipelines). */
  private rebuild(): void {
    for (const e of this.entries.values()) this.reread(e);
    for (const slot of this.slots.values()) {
      slot.stageNodes.forEach((entries, i) => {
        entries.forEach((e, k) => this.price(slot, i, k, e));
        this.refresh(slot, i);
      });
      for (let k = slot.size - 1; k >= 1; k--) slot.tree[k] = winner(slot, slot.tree[2 * k] ?? -1, slot.tree[2 * k + 1] ?? -1);
    }
  }

  /** A node's liveness and suspicion read again from the telemetry; its change is taken. */
  private reread(e: NodeEntry): void {
    e.dirty = false;
    const t = this.nodes[e.id];
    e.alive = t?.alive === true;
    e.suspect = t?.suspect === true;
  }

  private entry(nodeId: string): NodeEntry {
    let e = this.entries.get(nodeId);
    if (e === undefined) {
      e = { id: nodeId, alive: false, suspect: false, dirty: false, slots: [], pipes: [], stages: [] }; // read by rebuild()
      this.entries.set(nodeId, e);
    }
    return e;
  }

  /** The same call the scan makes for this stage (`chainCost` → `nodeCost`), cached. */
  private price(slot: ModelSlot, i: number, k: number, e: NodeEntry): void {
    const at = (slot.offset[i] as number) + k;
    slot.stageCost[at] = nodeCost(this.nodes[e.id], DEFAULT_WEIGHTS, DEFAULT_PENALTIES, this.extra[e.id] ?? 0, slot.shares[at] as number);
  }

  private refresh(slot: ModelSlot, i: number): void {
    const entries = slot.stageNodes[i] as readonly NodeEntry[];
    const costs = slot.stageCost;
    const base = slot.offset[i] as number;
    let sum = 0;
    let intact = true;
    let suspect = 0;
    for (let s = 0; s < entries.length; s++) {
      const e = entries[s] as NodeEntry;
      sum += costs[base + s] as number;
      if (!e.alive) intact = false;
      if (e.suspect) suspect = 1;
    }
    const chain = sum + (slot.hops[i] as number);
    slot.chain[i] = chain;
    slot.key[i] = intact ? chain : Infinity;
    slot.suspect[i] = suspect;
  }
}

/** Where each pipeline's stages start in a flat array of all the model's stages. */
function offsets(pipelines: readonly Pipeline[]): Int32Array {
  const out = new Int32Array(pipelines.length);
  let at = 0;
  pipelines.forEach((p, i) => {
    out[i] = at;
    at += p.stages.length;
  });
  return out;
}

/** The better of two leaves: intact before broken, without a suspect before with, then lower cost, then lower index (= id). */
function winner(slot: ModelSlot, a: number, b: number): number {
  if (a < 0) return b;
  if (b < 0) return a;
  const ka = slot.key[a] as number;
  const kb = slot.key[b] as number;
  if (ka !== Infinity && kb !== Infinity && slot.suspect[a] !== slot.suspect[b]) return slot.suspect[a] === 1 ? b : a;
  if (ka < kb) return a;
  if (kb < ka) return b;
  return a < b ? a : b;
}
