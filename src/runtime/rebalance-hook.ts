/**
 * The seam between a Swarm and the rebalancer plug-in (docs/rebalance.md). The rebalancer lives on
 * its own entry, `hecate-swarm/rebalance`, plugged in as `createSwarm(…, …, { rebalancer:
 * rebalancer() })`; the root keeps only these types: the decision and the runner that carries the
 * moves out are the plug-in's, so a swarm that never rebalances carries neither.
 */
import type { AnyActorRef } from 'xstate';
import type { MoveOrder } from '../../machines/swarm-moves.js';
import type { NodeStates, Pipeline } from '../core/types.js';
import type { Clock, Lease, TimeSource } from './types.js';

/** One span a node loads for a move (plain data). */
export interface PlannedLoad {
  readonly nodeId: string;
  readonly modelId: string;
  /** The new copy the span is for. */
  readonly pipelineId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  /** The span's weights, in GB (layers × `layerGb`). */
  readonly gb: number;
  /** Its load time, in seconds: `gb ÷` the node's load bandwidth. */
  readonly seconds: number;
}

/** One move as decided (plain data): the copies it replaces, the copies it forms, and its price (docs/rebalance.md). */
export interface PlannedMove {
  /** `resplit`, `regroup` or `form` (docs/rebalance.md "The rule"). */
  readonly kind: string;
  readonly modelId: string;
  /** The pipelines it replaces (they drain, then stop, once the new copies serve). */
  readonly removes: readonly string[];
  /** The pipelines it forms (routable once every span is loaded). */
  readonly adds: readonly Pipeline[];
  /** The spans nodes load for the new copies (a layer kept in place loads nothing). */
  readonly loads: readonly PlannedLoad[];
  /** Nodes that must drop a span before loading (no memory for both): their old copies stop for the load. */
  readonly dropsFirst: readonly string[];
  /** Layers loaded: Σ over `loads` of their layers. */
  readonly layersMoved: number;
  /** Counted-once layer-passes per unit of time the plan gains. */
  readonly gain: number;
  /** The replaced copies' own counted-once layer-passes (the hysteresis is a share of it). */
  readonly replaced: number;
  /** The move's load time, in seconds (its slowest node). */
  readonly loadSeconds: number;
  /** Layer-passes lost while it loads: the replaced copies through a node that drops first, for the load time. */
  readonly lost: number;
  /** Its value: gain over the horizon left once loaded, less what it loses meanwhile. */
  readonly value: number;
}

/** What a rebalance decided: its moves and the counted-once throughput before and after them. */
export interface RebalanceDecision {
  readonly moves: readonly PlannedMove[];
  readonly layersMoved: number;
  /** Counted-once layer-passes per unit of time now, once every move has formed, and the compute bound. */
  readonly before: number;
  readonly after: number;
  readonly bound: number;
}

/** What `swarm.rebalance()` returns: the decision, each move with the id the swarm carries it out under. */
export interface Rebalance extends RebalanceDecision {
  readonly moves: readonly (PlannedMove & { readonly id: string })[];
  /** The moves of an earlier rebalance still under way (then this one decided nothing). */
  readonly underWay: readonly string[];
}

/** A span to load, as the runner hands it to a loader. */
export interface SpanOrder extends PlannedLoad {
  readonly moveId: string;
}

/** A move event of the Swarm statechart, as a replicated log carries it (docs/rebalance.md "Replicas, serve and agents"). */
export type MoveEvent =
  | { readonly type: 'rebalance.begin'; readonly moves: readonly MoveOrder[] }
  | { readonly type: 'span.loaded'; readonly moveId: string; readonly nodeId: string }
  | { readonly type: 'span.failed'; readonly moveId: string; readonly nodeId: string; readonly reason: string }
  | { readonly type: 'copy.drained'; readonly moveId: string };

/** What a Swarm hands the plug-in when it attaches: its statechart, clock and what it reads. */
export interface RebalanceHost {
  /** The running Swarm actor: the plug-in reads its snapshot and sends it the move events. */
  readonly actor: AnyActorRef;
  readonly clock: Clock | TimeSource;
  /** The telemetry table (liveness is the statechart's). */
  telemetry(): NodeStates;
  /** Whether an open lease of `modelId` holds a node of `nodes` (a request in flight on a copy of them). */
  runsOn(modelId: string, nodes: ReadonlySet<string>): boolean;
  /**
   * A replica's: the move events go through its log (applied here when they come back, as on
   * every replica) instead of to the statechart at once. Resolves once applied; rejects if refused.
   */
  commit?(event: MoveEvent): Promise<unknown>;
  /** The start of the ids of the moves this runner decides (unique among replicas). @defaultValue `move-` */
  readonly movePrefix?: string;
}

/** What the plug-in gives each swarm it is attached to. */
export interface RebalancerHook {
  /** `swarm.rebalance(options)`: decides and begins the moves. */
  rebalance(options?: unknown): Rebalance;
  /** A lease ended: a draining move may be done. */
  leaseEnded(lease: Lease): void;
  /** The swarm stopped: timers cleared. */
  stop(): void;
}

/** What `SwarmOptions.rebalancer` takes: made by `rebalancer(options)` of `hecate-swarm/rebalance`. */
export interface RebalancerPlugin {
  readonly kind: 'rebalancer';
  attach(host: RebalanceHost): RebalancerHook;
}
