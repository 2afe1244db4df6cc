/**
 * What the library's own entries (sessions, persistence, replication, serve) reach inside a Swarm:
 * one internal interface behind a module-level symbol, as undici shares a pool's internals
 * (`kAddClient`). Not exported from any public entry; no module reads another's private members.
 */
import type { AnyActorRef, Snapshot } from 'xstate';
import type { NodeRecord } from '../../machines/node.machine.js';
import type { RescueReads, SwarmRestore } from '../../machines/swarm.machine.js';
import type { NodeProfile, Route, SwarmPlan } from '../core/types.js';
import type { Admission } from './admission.js';
import type { LifecycleCommand, LifecycleResult } from './swarm-contract.js';
import type { Clock, LeasedRoute, SwarmConfig, SwarmRequest, TimeSource } from './types.js';

/** The key of a Swarm's {@link SwarmInternals}. */
export const kInternals: unique symbol = Symbol('hecate-swarm.internals');

/** A running Swarm's internals, for the library's own entries. */
export interface SwarmInternals {
  /** Throws `Stopped` unless the statechart runs. */
  running(): void;
  /** The profiles and config the swarm was created with (persistence digests them). */
  readonly genesis: readonly [readonly NodeProfile[], SwarmConfig];
  /** Whether pipeline ids come from the context's seeded counter (a save carries it), else from an id source. */
  readonly seeded: boolean;
  /** The clock leases and actors run on. */
  readonly clock: Clock | TimeSource;
  /** The Swarm actor itself (the public handle is read-only). */
  readonly actor: AnyActorRef;
  /** A route with a lease on its nodes, counted as in flight (sessions reserve apart from `route`). */
  reserved(route: Route): LeasedRoute;
  /** A session's route after a failover: the copy it runs on learns the session's prompt (docs/prefix-cache.md). */
  learn(route: Route, request: SwarmRequest): void;
  /** A fresh lease id no lease takes. */
  mintId(): string;
  /** The swarm's admission: its slot ledger, queue, and the share hook a replica sets (docs/admission.md). */
  readonly admission: Admission;
  /** Calls `onDown` when `nodeId` goes down or leaves; returns the unsubscribe. */
  watchDown(nodeId: string, onDown: () => void): () => void;
  /** What the statechart's decisions read now (telemetry, in-flight load, routing index): for benchmarks and equivalence tests. */
  reads(): RescueReads;
  /** Applies one lifecycle command now: the one path every committed event takes. */
  apply<C extends LifecycleCommand>(command: C): LifecycleResult<C>;
  /** The in-flight counts a replica shares with the others (docs/replication.md, "Shared load"). */
  readonly load: SharedInflight;
}

/**
 * A Swarm's in-flight counts as replicas share them: its own per node (what it announces), a
 * listener told when one changes, and the others' merged counts, which the routing cost prices
 * with its own (the `inflight` reader the statechart's decisions get reads both).
 */
export interface SharedInflight {
  /** Reservations issued here and still open, per node. */
  local(): ReadonlyMap<string, number>;
  /** Sets (or, with undefined, clears) the one listener told after a node's local count changed. */
  onLocal(listener: ((nodeId: string) => void) | undefined): void;
  /** How many reservations the other replicas hold on a member node; a stranger is ignored. */
  setRemote(nodeId: string, count: number): void;
}

/** A persisted swarm's state continued through the statechart's input (a save from before the snapshot format). */
export interface RestoredInput {
  readonly plan: SwarmPlan;
  readonly profiles: readonly NodeProfile[];
  readonly restore: SwarmRestore;
  /** The seeded id counter; null when ids were minted from an id source. */
  readonly ids: number | null;
}

/** Where a swarm starts from, when not from a fresh plan; and a replica's policy. */
export interface SwarmOrigin {
  /** A save from before the snapshot format, continued through the statechart's input. */
  readonly restored?: RestoredInput;
  /** XState's persisted Swarm snapshot (decoded), its node actors' records, and whether its ids are seeded. */
  readonly snapshot?: { readonly value: Snapshot<unknown>; readonly records: ReadonlyMap<string, NodeRecord>; readonly seeded: boolean };
  /** Own marks of node actors are handed to the owner (`node.mark`), as a replica's are. */
  readonly defersOwnMarks?: boolean;
}
