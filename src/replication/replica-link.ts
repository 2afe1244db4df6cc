/**
 * Where a replica stands with the log (docs/replication.md): `catching-up`, `connected`,
 * `disconnected`, `closed`; the way back after NATS comes back (catch up to the stream's end,
 * then reconcile what the node actors saw meanwhile); and the wait for the first catch-up.
 */
import type { Clock } from '../runtime/types.js';
import type { LinkChange, LogStream } from './log-stream.js';
import type { ReplicationEmitted, ReplicationStatus } from './replication-events.js';

/** What the link needs of the replica. */
export interface LinkHost {
  readonly io: Clock;
  readonly log: LogStream;
  /** After a reconnect, how long heartbeats have to come back before reconciling. */
  readonly reconcileAfterMs: number;
  /** The last sequence applied, and whether the local Swarm exists yet. */
  applied(): number;
  built(): boolean;
  /** Re-proposes what the node actors say and the swarm has not applied. */
  reconcileAll(): void;
  emit(event: ReplicationEmitted): void;
}

/** A replica's standing with the log. */
export class ReplicaLink {
  private link: ReplicationStatus = 'catching-up';
  /** The sequence to reach before `catching-up` turns `connected`. */
  private target = 0;
  /** Reconnects so far: a rejoin that a newer one overtook stops asking. */
  private rejoins = 0;
  private caughtUp: { resolve(): void; reject(error: Error): void } | undefined;
  private reconcileTimer: unknown;
  private halted: Error | undefined;

  constructor(private readonly host: LinkHost) {}

  status(): ReplicationStatus {
    return this.link;
  }

  /** Resolves once caught up with the stream's end `last` (at least the genesis) for the first time. */
  caughtUpWith(last: number): Promise<void> {
    this.target = Math.max(last, 1);
    const ready = new Promise<void>((resolve, reject) => {
      this.caughtUp = { resolve, reject };
    });
    if (this.host.built() && this.host.applied() >= this.target) this.set('connected'); // a snapshot is the log's end
    return ready;
  }

  /** Ends the first catch-up with `error` (a log no replica could have written, a close). */
  fail(error: Error): void {
    this.caughtUp?.reject(error);
    this.caughtUp = undefined;
  }

  /** An entry was applied up to `seq` with `pending` still behind it: caught up when nothing is. */
  advanced(seq: number, pending: number): void {
    if (this.link === 'catching-up' && (pending === 0 || seq >= this.target)) this.set('connected');
  }

  /**
   * Stops for good with `error` (a format version this release does not read, the log trimmed past
   * this replica): `disconnected` from now on, serving its last view, the error in the event.
   */
  halt(error: Error): void {
    if (this.halted !== undefined || this.link === 'closed') return;
    this.halted = error;
    this.link = 'disconnected';
    this.host.emit({ type: 'replication.changed', status: 'disconnected', applied: this.host.applied(), error });
  }

  /** Why the replica stopped applying, if it did. */
  haltedBy(): Error | undefined {
    return this.halted;
  }

  /** Follows the connection: `disconnected` when it drops, a rejoin when it comes back. */
  changed(change: LinkChange): void {
    if (this.halted !== undefined) return;
    if (change === 'disconnect') this.set('disconnected');
    else void this.rejoin();
  }

  /** Closed for good. */
  close(): void {
    this.set('closed');
    this.host.io.clearTimeout(this.reconcileTimer as never);
  }

  /** Back on NATS: catch up to the stream's end, then, once heartbeats had time to return, reconcile every node. */
  private async rejoin(): Promise<void> {
    const attempt = ++this.rejoins;
    const current = () => attempt === this.rejoins && this.link !== 'closed';
    this.set('catching-up');
    // A fresh ordered consumer from the last applied sequence: the old one may have died with the server.
    this.host.log.restartConsumer();
    // JetStream recovering its streams after a server restart refuses its API for a while. On a
    // quiet swarm no entry will arrive to say the replica is caught up, and a replica that is not
    // connected proposes no marks: so ask again, with backoff, until it answers, the consumer
    // settles it, or a newer reconnect or close takes over.
    for (let waitMs = 100; ; waitMs = Math.min(2 * waitMs, 2000)) {
      try {
        const last = await this.host.log.lastSeq();
        if (!current()) return;
        this.target = last;
        if (this.host.applied() >= last && this.link === 'catching-up') this.set('connected');
        break;
      } catch {
        if (!current() || this.link !== 'catching-up') break;
        await new Promise<void>((resolve) => this.host.io.setTimeout(() => resolve(), waitMs));
        if (!current() || this.link !== 'catching-up') break;
      }
    }
    if (!current()) return;
    this.host.io.clearTimeout(this.reconcileTimer as never);
    this.reconcileTimer = this.host.io.setTimeout(() => this.host.reconcileAll(), this.host.reconcileAfterMs);
  }

  private set(state: ReplicationStatus): void {
    if (this.link === state || this.link === 'closed') return;
    this.link = state;
    if (state === 'connected' && this.caughtUp !== undefined && this.host.built()) {
      this.caughtUp.resolve();
      this.caughtUp = undefined;
    }
    this.host.emit({ type: 'replication.changed', status: state, applied: this.host.applied() });
  }
}
