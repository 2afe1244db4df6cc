import type { ExtraLoad } from '../core/cost.js';
import { declaredTelemetry, SwarmState } from '../core/state.js';
import type { NodeProfile, NodeStates, NodeTelemetry, Pipeline, SwarmPlan } from '../core/types.js';
import { inflightLoad } from './inflight.js';
import { RouterIndex } from './router-index.js';
import { StallWatch } from './stall-watch.js';

/** Why a node is suspect (bits): its failure detector says so, or its requests stopped coming back. */
export const DOUBT = { detector: 1, stalled: 2 } as const;

/**
 * How many times its requests' expected latency a watched node may hold them with none back
 * before it is stalled (docs/detection.md). @defaultValue 4
 */
export const STALL_FACTOR = 4;

/** A record keyed by node ids with no prototype, so `__proto__` or `toString` is an ordinary key. */
function idRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/**
 * The runtime's view of every node for routing: its telemetry (the node actor's EWMAs and the
 * Swarm's liveness, copied here after each change), its in-flight load, and the routing index
 * over both. It lives off the statechart for speed: a route reads it without an actor message.
 * The two records are handed to the core as `NodeStates` and `ExtraLoad`: null-prototype, so
 * any string id behaves like any other. Entries are frozen and replaced, never mutated.
 */
export class TelemetryTable {
  /** Telemetry per member node. */
  readonly nodes: Record<string, NodeTelemetry> = idRecord();
  /** Extra load per node from in-flight reservations (absent when none). */
  readonly extra: Record<string, number> = idRecord();
  private readonly inflight = new Map<string, number>();
  /** Why each suspect member is suspect ({@link DOUBT} bits); absent when it is not. */
  private readonly doubts = new Map<string, number>();
  /** Leases on watched nodes that have not come back (docs/detection.md). */
  readonly stalls = new StallWatch(STALL_FACTOR);
  private index: RouterIndex;
  private cached: SwarmState | undefined;

  /** @param plan the plan the routing index is built over (the Swarm statechart's) */
  constructor(plan: SwarmPlan, profiles: readonly NodeProfile[]) {
    for (const p of profiles) this.nodes[p.id] = Object.freeze(declaredTelemetry(p));
    this.index = new RouterIndex(plan, this.nodes, this.extra);
  }

  /** A member's telemetry, or undefined for a stranger. */
  get(nodeId: string): NodeTelemetry | undefined {
    return Object.prototype.hasOwnProperty.call(this.nodes, nodeId) ? this.nodes[nodeId] : undefined;
  }

  /** A newcomer, with its declared telemetry. */
  join(profile: NodeProfile): void {
    this.nodes[profile.id] = Object.freeze(declaredTelemetry(profile));
    this.cached = undefined;
  }

  /** How many live members are suspect. */
  get suspects(): number {
    return this.doubts.size;
  }

  /** Forgets a retired node: its telemetry and in-flight load. */
  leave(nodeId: string): void {
    this.doubts.delete(nodeId);
    this.stalls.idle(nodeId);
    delete this.nodes[nodeId];
    delete this.extra[nodeId];
    this.inflight.delete(nodeId);
    this.cached = undefined;
  }

  /**
   * Sets a member's liveness (the Swarm statechart's, after it took the event); either way it is
   * no longer suspect, and a node back from down waits for no request sent before.
   */
  setAlive(nodeId: string, alive: boolean): void {
    const current = this.get(nodeId);
    if (current === undefined || (current.alive === alive && current.suspect !== true)) return;
    if (alive && !current.alive) this.stalls.idle(nodeId);
    const { suspect: _, ...rest } = current;
    this.doubts.delete(nodeId);
    this.nodes[nodeId] = Object.freeze({ ...rest, alive });
    this.changed(nodeId);
  }

  /**
   * Sets or clears one reason ({@link DOUBT}) to suspect a live member; it is suspect while any
   * reason holds. Returns whether its suspicion changed.
   */
  doubt(nodeId: string, reason: number, on: boolean): boolean {
    const current = this.get(nodeId);
    const was = this.doubts.get(nodeId) ?? 0;
    const now = on ? was | reason : was & ~reason;
    if (current === undefined || !current.alive || now === was) return false;
    if (now === 0) {
      this.setAlive(nodeId, true);
      return true;
    }
    this.doubts.set(nodeId, now);
    if (was !== 0) return false;
    this.nodes[nodeId] = Object.freeze({ ...current, suspect: true });
    this.changed(nodeId);
    return true;
  }

  /** Marks the stalled nodes among `stages` suspect; returns whether one was not already. */
  flagStalled(stages: readonly { readonly nodeId: string }[], now: number): boolean {
    let flagged = false;
    for (const s of stages) if (this.stalls.stalled(s.nodeId, now) && this.doubt(s.nodeId, DOUBT.stalled, true)) flagged = true;
    return flagged;
  }

  /** Replaces a member's telemetry (frozen by the caller) and re-prices its in-flight load; a suspect stays suspect. */
  put(nodeId: string, telemetry: NodeTelemetry): void {
    this.nodes[nodeId] = this.nodes[nodeId]?.suspect === true ? Object.freeze({ ...telemetry, suspect: true }) : telemetry;
    // A reservation costs the node's latency estimate: re-price its in-flight load before the index reads it.
    const count = this.inflight.get(nodeId);
    if (count !== undefined) this.extra[nodeId] = inflightLoad(count, telemetry);
    this.changed(nodeId);
  }

  /** Counts `delta` more (or fewer) in-flight reservations on a member node. */
  addInflight(nodeId: string, delta: number): void {
    const telemetry = this.get(nodeId);
    if (telemetry === undefined) return;
    const count = Math.max((this.inflight.get(nodeId) ?? 0) + delta, 0);
    if (count === 0) {
      this.inflight.delete(nodeId);
      delete this.extra[nodeId];
      this.stalls.idle(nodeId);
      this.doubt(nodeId, DOUBT.stalled, false);
    } else {
      this.inflight.set(nodeId, count);
      this.extra[nodeId] = inflightLoad(count, telemetry);
    }
    this.index.nodeChanged(nodeId);
  }

  /** The statechart adopted a new plan: the index is rebuilt over it. */
  adopt(plan: SwarmPlan): void {
    this.cached = undefined;
    this.index = new RouterIndex(plan, this.nodes, this.extra);
  }

  /** The cheapest intact pipeline of a model for the default request (see {@link RouterIndex.best}). */
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined {
    return this.index.best(modelId);
  }

  /** The copy a failover of `nodeId` would take (see {@link RouterIndex.bestWithout}). */
  bestWithout(modelId: string, nodeId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined {
    return this.index.bestWithout(modelId, nodeId);
  }

  /** `plan` and this telemetry as an immutable {@link SwarmState}, cached until either changes. */
  state(plan: SwarmPlan): SwarmState {
    if (this.cached?.plan !== plan) this.cached = SwarmState.from({ plan, nodes: this.nodes as NodeStates });
    return this.cached;
  }

  /** The core's view of `plan` and this telemetry, over the live records (no copy). */
  view(plan: SwarmPlan): { readonly plan: SwarmPlan; readonly nodes: NodeStates } {
    return { plan, nodes: this.nodes };
  }

  /** The in-flight load records, as the core reads them. */
  get load(): ExtraLoad {
    return this.extra;
  }

  private changed(nodeId: string): void {
    this.cached = undefined;
    this.index.nodeChanged(nodeId);
  }
}
