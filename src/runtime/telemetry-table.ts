import type { ExtraLoad } from '../core/cost.js';
import { declaredTelemetry, SwarmState } from '../core/state.js';
import type { NodeProfile, NodeStates, NodeTelemetry, Pipeline, SwarmPlan } from '../core/types.js';
import { inflightLoad } from './inflight.js';
import { RouterIndex } from './router-index.js';

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
  /** Built at the first query after a plan change: a replayed log adopts plans faster than it asks. */
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

  /** Forgets a retired node: its telemetry and in-flight load. */
  leave(nodeId: string): void {
    delete this.nodes[nodeId];
    delete this.extra[nodeId];
    this.inflight.delete(nodeId);
    this.cached = undefined;
  }

  /** Sets a member's liveness (the Swarm statechart's, after it took the event). */
  setAlive(nodeId: string, alive: boolean): void {
    const current = this.get(nodeId);
    if (current === undefined || current.alive === alive) return;
    this.nodes[nodeId] = Object.freeze({ ...current, alive });
    this.changed(nodeId);
  }

  /** Replaces a member's telemetry (frozen by the caller) and re-prices its in-flight load. */
  put(nodeId: string, telemetry: NodeTelemetry): void {
    this.nodes[nodeId] = telemetry;
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
    } else {
      this.inflight.set(nodeId, count);
      this.extra[nodeId] = inflightLoad(count, telemetry);
    }
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
