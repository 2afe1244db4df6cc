/**
 * What the swarm's reservations occupy of its nodes' slots (docs/admission.md, "Capacity"). A
 * request on a route spends, on each node, the share of its time that node's stage takes
 * (`t_i / Σ t`, a stage's time being its layers over its node's score): so a copy alone holds
 * `min over its stages of slots × (copy time ÷ stage time)` requests at once, as the load
 * simulator defines capacity, and a node shared by several copies shares its slots across them.
 * A node without `slots` never fills. Kept in step with the lease table: every lease is tracked
 * when issued and untracked when it ends (released, expired, or its node removed).
 */
import type { NodeProfile, Stage, SwarmPlan } from '../core/types.js';
import type { Route } from '../core/types.js';
import type { Lease } from './types.js';

/** One node's part of a request on a route: how much of one slot it holds. */
interface Part {
  readonly node: string;
  readonly w: number;
  /** The node's slots when the shape was computed (a member's profile does not change). */
  readonly slots: number;
}

/** A copy's parts on its limited nodes, and its capacity (requests at once; Infinity when none is limited). */
export interface CopyShape {
  /** The stages it was computed from (a cached shape serves only the same stages). */
  readonly stages: readonly Stage[];
  readonly parts: readonly Part[];
  readonly capacity: number;
}

interface Track {
  readonly pipelineId: string;
  parts: readonly Part[];
  readonly start: number;
}

/** Slots are compared with this slack, so sums of shares that should be whole are. */
const EPSILON = 1e-9;

/** The occupancy of every limited node by the open leases. */
export class SlotLedger {
  private readonly occupied = new Map<string, number>();
  private readonly tracks = new Map<string, Track>();
  private readonly perCopy = new Map<string, number>();
  private shapes = new WeakMap<SwarmPlan, Map<string, CopyShape>>();
  /** Mean time a lease was held, ms (an EWMA over ended leases), for retry-after estimates; undefined before the first. */
  meanHoldMs: number | undefined;

  /**
   * @param profileOf a member's profile (its `slots` and `score`), undefined for a stranger
   * @param remote the reservations other replicas announced on a node (docs/replication.md,
   *   "Shared load"), each counted at the share of a slot one of this copy's requests holds there
   */
  constructor(
    private readonly profileOf: (nodeId: string) => NodeProfile | undefined,
    private readonly remote: (nodeId: string) => number = () => 0,
  ) {}

  /** Reservations tracked. */
  get size(): number {
    return this.tracks.size;
  }

  /** Open reservations on the copy `pipelineId`. */
  inFlightOn(pipelineId: string): number {
    return this.perCopy.get(pipelineId) ?? 0;
  }

  /** How much of `nodeId`'s slots the open leases hold (0 for an unlimited node). */
  occupancy(nodeId: string): number {
    return this.occupied.get(nodeId) ?? 0;
  }

  /** The copy's shape under `plan`, cached per plan (a plan is immutable; a new one comes with every change). */
  shape(plan: SwarmPlan, pipelineId: string, stages: readonly Stage[]): CopyShape {
    let byId = this.shapes.get(plan);
    if (byId === undefined) this.shapes.set(plan, (byId = new Map()));
    let s = byId.get(pipelineId);
    if (s === undefined || s.stages !== stages) {
      s = this.shapeOf(stages);
      byId.set(pipelineId, s);
    }
    return s;
  }

  /** Whether one more request fits on every limited node of the copy (each node's slots × `headroom`). */
  fits(shape: CopyShape, headroom = 1): boolean {
    for (const p of shape.parts) if ((this.occupied.get(p.node) ?? 0) + p.w * (1 + this.remote(p.node)) > p.slots * headroom + EPSILON) return false;
    return true;
  }

  /** How full the copy's fullest limited node is against its slots × `headroom`, 0 to 1 (0 when none is limited). */
  fill(shape: CopyShape, headroom = 1): number {
    let most = 0;
    for (const p of shape.parts) most = Math.max(most, (this.occupied.get(p.node) ?? 0) / (p.slots * headroom));
    return most;
  }

  /** Counts a new lease on `route`'s nodes. */
  track(lease: Lease, route: Route, shape: CopyShape | undefined, now: number): void {
    const parts = (shape ?? this.shapeOf(route.stages)).parts;
    for (const p of parts) this.occupied.set(p.node, (this.occupied.get(p.node) ?? 0) + p.w);
    this.tracks.set(lease.id, { pipelineId: route.pipelineId, parts, start: now });
    this.perCopy.set(route.pipelineId, (this.perCopy.get(route.pipelineId) ?? 0) + 1);
  }

  /** Stops counting an ended lease; its time held feeds {@link meanHoldMs}. False for a lease not tracked. */
  end(leaseId: string, now: number): boolean {
    const t = this.tracks.get(leaseId);
    if (t === undefined) return false;
    this.tracks.delete(leaseId);
    for (const p of t.parts) {
      const left = (this.occupied.get(p.node) ?? 0) - p.w;
      if (left > EPSILON) this.occupied.set(p.node, left);
      else this.occupied.delete(p.node);
    }
    const n = (this.perCopy.get(t.pipelineId) ?? 1) - 1;
    if (n > 0) this.perCopy.set(t.pipelineId, n);
    else this.perCopy.delete(t.pipelineId);
    const held = Math.max(0, now - t.start);
    this.meanHoldMs = this.meanHoldMs === undefined ? held : 0.9 * this.meanHoldMs + 0.1 * held;
    return true;
  }

  /** A removed node leaves every lease (its slots go with it); shapes are computed again. */
  dropNode(nodeId: string): void {
    this.occupied.delete(nodeId);
    for (const t of this.tracks.values()) if (t.parts.some((p) => p.node === nodeId)) t.parts = t.parts.filter((p) => p.node !== nodeId);
    this.shapes = new WeakMap();
  }

  /** A request's part on each limited node of `stages` (time share per node, a node's stages summed). */
  private shapeOf(stages: readonly Stage[]): CopyShape {
    let total = 0;
    const time = new Map<string, number>();
    for (const s of stages) {
      const t = (s.layerEnd - s.layerStart) / (this.profileOf(s.nodeId)?.score ?? 1);
      total += t;
      time.set(s.nodeId, (time.get(s.nodeId) ?? 0) + t);
    }
    const parts: Part[] = [];
    let capacity = Infinity;
    for (const [node, t] of time) {
      const slots = this.profileOf(node)?.slots;
      if (slots === undefined) continue;
      const w = total > 0 ? t / total : 1 / time.size;
      parts.push({ node, w, slots });
      capacity = Math.min(capacity, slots / w);
    }
    return { stages, parts, capacity };
  }
}
