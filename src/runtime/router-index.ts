import { chainCost, resolveRequest, type ExtraLoad, type ResolvedRequest } from '../core/cost.js';
import { planIndex } from '../core/plan-index.js';
import type { NodeStates, Pipeline, SwarmPlan } from '../core/types.js';

const DEFAULT_REQUEST: ResolvedRequest = resolveRequest({});

/** One model's pipelines, their chain costs and a tournament tree over them. */
interface ModelSlot {
  readonly pipelines: readonly Pipeline[];
  /** Chain cost (nodes + hops, default weights) of each pipeline, by index. */
  readonly chain: Float64Array;
  /** Dead nodes of each pipeline; a pipeline is eligible when 0. */
  readonly dead: Int32Array;
  /** Tournament tree: tree[1] is the winner's index; leaves start at `size`. -1 = empty. */
  readonly tree: Int32Array;
  readonly size: number;
}

/**
 * The per-model routing index (SPEC §10): for the default weights, each model's cheapest intact
 * pipeline is kept in a tournament tree updated when a node's telemetry, liveness or in-flight
 * load changes, so a route costs O(1) and a telemetry update O(log pipelines) — independent of
 * swarm size. It computes costs with the same `chainCost` as the scan, in the same order, and
 * breaks ties by pipeline id, so it always chooses what `routeRequest` would.
 */
export class RouterIndex {
  private readonly slots = new Map<string, ModelSlot>();
  /** node id → [slot, pipeline index] pairs it appears in. */
  private readonly uses = new Map<string, Array<readonly [ModelSlot, number]>>();

  constructor(
    plan: SwarmPlan,
    private readonly nodes: NodeStates,
    private readonly extra: ExtraLoad,
  ) {
    for (const [modelId, pipelines] of planIndex(plan).pipelinesByModel) {
      let size = 1;
      while (size < pipelines.length) size *= 2;
      const slot: ModelSlot = {
        pipelines,
        chain: new Float64Array(pipelines.length),
        dead: new Int32Array(pipelines.length),
        tree: new Int32Array(2 * size).fill(-1),
        size,
      };
      this.slots.set(modelId, slot);
      pipelines.forEach((p, i) => {
        for (const s of p.stages) {
          let list = this.uses.get(s.nodeId);
          if (list === undefined) this.uses.set(s.nodeId, (list = []));
          list.push([slot, i]);
        }
        this.refresh(slot, i);
        slot.tree[size + i] = i;
      });
      for (let k = size - 1; k >= 1; k--) slot.tree[k] = this.winner(slot, slot.tree[2 * k] ?? -1, slot.tree[2 * k + 1] ?? -1);
    }
  }

  /** The cheapest intact pipeline of a model and its chain cost, or undefined if none is intact. */
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined {
    const slot = this.slots.get(modelId);
    if (slot === undefined) return undefined;
    const i = slot.tree[1] ?? -1;
    if (i < 0 || (slot.dead[i] ?? 1) > 0) return undefined;
    return { pipeline: slot.pipelines[i] as Pipeline, chain: slot.chain[i] ?? Infinity };
  }

  /** Re-reads one node's telemetry and in-flight load and re-ranks the pipelines it is in. */
  nodeChanged(nodeId: string): void {
    const list = this.uses.get(nodeId);
    if (list === undefined) return;
    for (const [slot, i] of list) {
      this.refresh(slot, i);
      for (let k = (slot.size + i) >> 1; k >= 1; k >>= 1) {
        slot.tree[k] = this.winner(slot, slot.tree[2 * k] ?? -1, slot.tree[2 * k + 1] ?? -1);
      }
    }
  }

  private refresh(slot: ModelSlot, i: number): void {
    const p = slot.pipelines[i] as Pipeline;
    let dead = 0;
    for (const s of p.stages) if (this.nodes[s.nodeId]?.alive !== true) dead++;
    slot.dead[i] = dead;
    slot.chain[i] = chainCost(p.stages, this.nodes, DEFAULT_REQUEST, this.extra);
  }

  /** The better of two leaves: intact before broken, then lower cost, then lower index (= id). */
  private winner(slot: ModelSlot, a: number, b: number): number {
    if (a < 0) return b;
    if (b < 0) return a;
    const ka = (slot.dead[a] ?? 1) > 0 ? Infinity : (slot.chain[a] ?? Infinity);
    const kb = (slot.dead[b] ?? 1) > 0 ? Infinity : (slot.chain[b] ?? Infinity);
    if (ka < kb) return a;
    if (kb < ka) return b;
    return a < b ? a : b;
  }
}
