import type { ExtraLoad } from '../core/cost.js';
import { declaredTelemetry, SwarmState } from '../core/state.js';
import type { NodeProfile, NodeStates, NodeTelemetry, Pipeline, SwarmPlan } from '../core/types.js';
import { inflightLoad } from './inflight.js';
import { RouterIndex } from './router-index.js';

/** A reason to suspect a node (bits of {@link TelemetryTable.doubt}): its failure detector's phi passed the suspect level. */
export const SUSPECTED = 1;
/** A reason to suspect a node: it holds requests and has answered none for too long. */
export const STALLED = 2;

/**
 * How many times their expected latency a watched node may hold requests without answering one
 * before it is stalled (docs/detection.md).
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
  /** Reservations other replicas announced on each node (`src/replication/merged-inflight.ts`); priced with the local ones. */
  private readonly remote = new Map<string, number>();
  /** Told after a node's local in-flight count changed (a replica announces its counts). */
  onLocal: ((nodeId: string) => void) | undefined;
  /** Why each suspect member is suspect ({@link SUSPECTED}, {@link STALLED} bits); absent when it is not. */
  private readonly doubts = new Map<string, number>();
  /** Watched nodes holding requests: since when none came back, and the longest latency they were expected to take. */
  readonly waits = new Map<string, { since: number; expectMs: number }>();
  /** Built at the first query after a plan change: a replay of many lifecycle commands adopts plans faster than it asks. */
  private index: RouterIndex | undefined;
  private plan: SwarmPlan;
  private cached: SwarmState | undefined;

  /** @param plan the plan the routing index is built over (the Swarm statechart's) */
  constructor(plan: SwarmPlan, profiles: readonly NodeProfile[]) {
    for (const p of profiles) this.nodes[p.id] = Object.freeze(declaredTelemetry(p));
    this.plan = plan;
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
    this.waits.delete(nodeId);
    delete this.nodes[nodeId];
    delete this.extra[nodeId];
    this.inflight.delete(nodeId);
    this.remote.delete(nodeId);
    this.cached = undefined;
  }

  /**
   * Sets a member's liveness (the Swarm statechart's, after it took the event); either way it is
   * no longer suspect, and a node back from down waits for no request sent before.
   */
  setAlive(nodeId: string, alive: boolean): void {
    const current = this.get(nodeId);
    if (current === undefined || (current.alive === alive && current.suspect !== true)) return;
    if (alive && !current.alive) this.waits.delete(nodeId);
    const { suspect: _, ...rest } = current;
    this.doubts.delete(nodeId);
    this.nodes[nodeId] = Object.freeze({ ...rest, alive });
    this.changed(nodeId);
  }

  /**
   * Sets or clears one reason ({@link SUSPECTED}, {@link STALLED}) to suspect a live member; it is
   * suspect while any reason holds. Returns whether its suspicion changed.
   */
  doubt(nodeId: string, reason: number, on: boolean): boolean {
    const was = this.doubts.get(nodeId) ?? 0;
    const now = on ? was | reason : was & ~reason;
    const current = now === was ? undefined : this.get(nodeId);
    if (current === undefined || !current.alive) return false;
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

  /** Requests expected to take `expectMs` reserved at `now` on watched `nodes`. */
  wait(nodes: readonly string[], now: number, expectMs: number): void {
    for (const n of nodes) {
      const w = this.waits.get(n);
      if (w === undefined) this.waits.set(n, { since: now, expectMs });
      else w.expectMs = Math.max(w.expectMs, expectMs);
    }
  }

  /** A request through `nodes` came back at `now`: they are not stalled, and their wait starts over. */
  answered(nodes: readonly string[], now: number): void {
    for (const n of nodes) {
      const w = this.waits.get(n);
      if (w !== undefined) w.since = now;
      this.doubt(n, STALLED, false);
    }
  }

  /** Marks the nodes of `stages` stalled by `now` suspect; returns whether one was not suspect already. */
  flagStalled(stages: readonly { readonly nodeId: string }[], now: number): boolean {
    let flagged = false;
    for (const { nodeId } of stages) {
      const w = this.waits.get(nodeId);
      if (w !== undefined && now - w.since > STALL_FACTOR * w.expectMs && this.doubt(nodeId, STALLED, true)) flagged = true;
    }
    return flagged;
  }

  /** Replaces a member's telemetry (frozen by the caller) and re-prices its in-flight load; a suspect stays suspect. */
  put(nodeId: string, telemetry: NodeTelemetry): void {
    this.nodes[nodeId] = this.doubts.size > 0 && this.doubts.has(nodeId) ? Object.freeze({ ...telemetry, suspect: true }) : telemetry;
    // A reservation costs the node's latency estimate: re-price its in-flight load before the index reads it.
    const count = this.inflight.size > 0 || this.remote.size > 0 ? (this.inflight.get(nodeId) ?? 0) + (this.remote.get(nodeId) ?? 0) : 0;
    if (count > 0) this.extra[nodeId] = inflightLoad(count, telemetry);
    this.changed(nodeId);
  }

  /** Counts `delta` more (or fewer) in-flight reservations on a member node. */
  addInflight(nodeId: string, delta: number): void {
    const telemetry = this.get(nodeId);
    if (telemetry === undefined) return;
    const count = Math.max((this.inflight.get(nodeId) ?? 0) + delta, 0);
    if (count === 0) {
      this.inflight.delete(nodeId);
      this.waits.delete(nodeId);
      this.doubt(nodeId, STALLED, false);
    } else {
      this.inflight.set(nodeId, count);
    }
    this.price(nodeId, telemetry);
    this.onLocal?.(nodeId);
  }

  /** This replica's own in-flight counts per node (reservations issued here). */
  get localInflight(): ReadonlyMap<string, number> {
    return this.inflight;
  }

  /**
   * Sets how many reservations other replicas hold on a member node (their merged announcements):
   * its in-flight load prices local and remote together. A stranger is ignored. Stalls watch only
   * the local requests (a remote count neither starts nor holds a wait).
   */
  setRemoteInflight(nodeId: string, count: number): void {
    const telemetry = this.get(nodeId);
    const before = this.remote.get(nodeId) ?? 0;
    if (telemetry === undefined || before === count) return;
    if (count > 0) this.remote.set(nodeId, count);
    else this.remote.delete(nodeId);
    this.price(nodeId, telemetry);
    if (count < before) this.onRemoteFreed?.();
  }

  /** How many reservations other replicas announced on `nodeId` (0 when none, or for a stranger). */
  remoteOf(nodeId: string): number {
    return this.remote.get(nodeId) ?? 0;
  }

  /** Told when another replica's reservations on a node went down (admission wakes its queue). */
  onRemoteFreed: (() => void) | undefined;

  /** Re-prices a node's in-flight load from its local and remote counts. */
  private price(nodeId: string, telemetry: NodeTelemetry): void {
    const count = (this.inflight.get(nodeId) ?? 0) + (this.remote.get(nodeId) ?? 0);
    if (count === 0) delete this.extra[nodeId];
    else this.extra[nodeId] = inflightLoad(count, telemetry);
    this.index?.nodeChanged(nodeId);
  }

  /** The statechart adopted a new plan: the index is rebuilt over it, at the next query. */
  adopt(plan: SwarmPlan): void {
    this.cached = undefined;
    this.plan = plan;
    this.index = undefined;
  }

  private get ranked(): RouterIndex {
    return (this.index ??= new RouterIndex(this.plan, this.nodes, this.extra));
  }

  /** The cheapest intact pipeline of a model for the default request (see {@link RouterIndex.best}). */
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined {
    return this.ranked.best(modelId);
  }

  /** The intact pipelines of a model whose chain `keep` accepts (see {@link RouterIndex.visitBelow}). */
  visitBelow(modelId: string, suspects: boolean, keep: (chain: number) => boolean, visit: (pipeline: Pipeline, chain: number) => void): void {
    this.ranked.visitBelow(modelId, suspects, keep, visit);
  }

  /** Reservations in flight on a member node. */
  inflightOf(nodeId: string): number {
    return this.inflight.get(nodeId) ?? 0;
  }

  /** The copy a failover of `nodeId` would take (see {@link RouterIndex.bestWithout}). */
  bestWithout(modelId: string, nodeId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined {
    return this.ranked.bestWithout(modelId, nodeId);
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
    this.index?.nodeChanged(nodeId);
  }
}
