/**
 * What a replica of a replicated swarm says about itself (docs/replication.md): where it stands
 * with the log, the entries it applied, its counters; and the listeners that hear it.
 */
import type { Clock } from '../runtime/types.js';
import type { LogEntry } from './log-entry.js';

/**
 * Where a replica stands with the log: `catching-up` (applying what the stream holds beyond its
 * last applied sequence; it serves on its last view meanwhile, except at start), `connected`
 * (caught up, applying as entries come), `disconnected` (cut off from NATS: routing on its last
 * view, proposals wait or fail), `closed`.
 */
export type ReplicationStatus = 'catching-up' | 'connected' | 'disconnected' | 'closed';

/** What a replicated swarm emits besides the Swarm's own events. */
export type ReplicationEmitted =
  /** `error`: why the replica stopped applying for good (a format version it does not read, the log trimmed past it). */
  | { readonly type: 'replication.changed'; readonly status: ReplicationStatus; readonly applied: number; readonly error?: Error }
  /** One log entry applied (or found a no-op, or refused: `error`), in stream order. */
  | { readonly type: 'replication.applied'; readonly seq: number; readonly entry: LogEntry; readonly error?: Error }
  /** A log entry skipped because it is not signed as it must be (a replica with the swarm secret): `error` (`Rejected`) says why. */
  | { readonly type: 'replication.rejected'; readonly seq: number; readonly error: Error };

/** Counters of a replica, for tests and dashboards. */
export interface ReplicationStats {
  /** The last stream sequence applied (0 before the genesis). */
  readonly applied: number;
  /**
   * Replica lag: log entries on the stream behind the last one this replica was handed (0 when
   * caught up; as last known while cut off).
   */
  readonly lag: number;
  /** The log sequence of the KV snapshot this replica started from; 0 when it replayed the whole log. */
  readonly snapshot: number;
  /** Entries applied after the snapshot (each stream sequence once: `snapshot + entries === applied` when none was lost). */
  readonly entries: number;
  /** Messages delivered again for a sequence already applied (after a reconnect), and skipped. */
  readonly redelivered: number;
  /** Own marks (detector, ejection, self-revival) dropped as stale: another entry on the node came first. */
  readonly staleMarks: number;
  /** Entries that were refused when applied (e.g. a duplicate node), on every replica alike. */
  readonly refused: number;
  /**
   * With the swarm secret: log entries skipped because they are not signed with it, were signed
   * more than 30 s from when the stream stored them, or repeat an applied one (a replay).
   */
  readonly rejected: number;
  /** With the swarm secret: heartbeats, progress announcements and directory entries dropped for their signature or age. */
  readonly rejectedMessages: number;
  /**
   * The log's format floor: the highest format version applied so far (1 while the log is unsigned,
   * e.g. during a rolling upgrade; 2 from its first signed entry). docs/replication.md, "Upgrades".
   */
  readonly floor: number;
  /** The format version this replica writes now: never below the floor (docs/replication.md, "Upgrades"). */
  readonly format: number;
  /**
   * The replicas whose announcements (live, or live or withdrawn within the last liveness window)
   * do not read the newest format this replica writes, so hold it below it: during an upgrade,
   * replicas of the release before (or a client of the NATS server announcing as one). Empty once
   * the floor is the newest.
   */
  readonly heldBy: readonly string[];
}

/** The replication events' types, to tell them from the Swarm's own on `on`. */
export const REPLICATION_EVENTS: ReadonlySet<string> = new Set<ReplicationEmitted['type']>(['replication.changed', 'replication.applied', 'replication.rejected']);

/** The listeners of a replica's replication events. */
export class ReplicationListeners {
  private readonly listeners = new Set<(event: ReplicationEmitted) => void>();

  constructor(private readonly clock: Clock) {}

  /** Adds a listener of one type; returns the unsubscribe. */
  add<T extends ReplicationEmitted['type']>(type: T, handler: (event: Extract<ReplicationEmitted, { type: T }>) => void): () => void {
    const l = (e: ReplicationEmitted) => {
      if (e.type === type) handler(e as Extract<ReplicationEmitted, { type: T }>);
    };
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /**
   * To every listener. A listener that throws must not stop replication (this runs inside the
   * log consumer and the connection watcher): its error is thrown again on its own, as XState
   * does for the Swarm's handlers, and the other listeners still hear the event.
   */
  emit(event: ReplicationEmitted): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch (error) {
        this.clock.setTimeout(() => {
          throw error;
        }, 0);
      }
    }
  }
}
