/**
 * The seam between a Swarm and the rebalancer plug-in (docs/rebalance.md). The rebalancer lives on
 * its own entry, `hecate-swarm/rebalance`, plugged in as `createSwarm(…, …, { rebalancer:
 * rebalancer() })`; the root keeps only these types: the decision and the runner that carries the
 * moves out are the plug-in's, so a swarm that never rebalances carries neither.
 */
import type { AnyActorRef } from 'xstate';
import type { NodeStates, Pipeline } from '../core/types.js';
import type { Clock, Lease, TimeSource } from './types.js';

/** One span a node loads for a move (plain data). */
export interface PlannedLoad {
  readonly nodeId: string;
  readonly modelId: string;
  readonly pipelineId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly gb: number;
  readonly seconds: number;
}

/** One move as decided (plain data): what `proposeMoves` of `hecate-swarm/rebalance` returns. */
export interface PlannedMove {
  readonly kind: string;
  readonly modelId: string;
  readonly removes: readonly string[];
  readonly adds: readonly Pipeline[];
  readonly loads: readonly PlannedLoad[];
  readonly dropsFirst: readonly string[];
  readonly layersMoved: number;
  readonly gain: number;
  readonly replaced: number;
  readonly loadSeconds: number;
  readonly lost: number;
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

/** What a Swarm hands the plug-in when it attaches: its statechart, clock and what it reads. */
export interface RebalanceHost {
  /** The running Swarm actor: the plug-in reads its snapshot and sends it the move events. */
  readonly actor: AnyActorRef;
  readonly clock: Clock | TimeSource;
  /** The telemetry table (liveness is the statechart's). */
  telemetry(): NodeStates;
  /** Whether an open lease of `modelId` holds a node of `nodes` (a request in flight on a copy of them). */
  runsOn(modelId: string, nodes: ReadonlySet<string>): boolean;
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
