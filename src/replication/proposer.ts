/**
 * A replica's proposals (docs/replication.md): a lifecycle command put on the log under an id of
 * its own, retried until the stream keeps it, and settled once it came back applied; and the own
 * marks of its node actors, proposed once per view of the node.
 */
import type { OwnMark } from '../../machines/swarm-context.js';
import type { LifecycleEvent } from '../persistence/persisted.js';
import type { Clock } from '../runtime/types.js';
import { randomName } from './connect-options.js';
import { encodeEntry, type LogEntry } from './log-entry.js';
import type { LogStream } from './log-stream.js';
import { ReplicationError } from './replication-error.js';

interface Waiter {
  resolve(value: unknown): void;
  reject(error: Error): void;
  /** Makes the entry (given its version and id): to propose it again at another version. */
  readonly make: (v: number, id: string) => LogEntry;
}

/** What proposing needs to know of the replica. */
export interface ProposerHost {
  /** The swarm's name and this replica's, for messages. */
  readonly name: string;
  readonly replicaId: string;
  readonly io: Clock;
  readonly log: LogStream;
  /** How long a lifecycle call keeps trying to reach the log. */
  readonly proposeTimeoutMs: number;
  closed(): boolean;
  /** Whether the replica is caught up and on NATS: only then are its own marks news. */
  connected(): boolean;
  /** The format version to write entries in (docs/replication.md, "Upgrades"). */
  format(): number;
  /** The entry as published now: version 2 signed at this moment (each attempt afresh), version 1 as it is. */
  seal(entry: LogEntry): LogEntry;
}

/** Proposals of one replica connection. */
export class Proposer {
  /** Every id of this connection starts so: `<replica>.<connection>.`, unique across restarts (the stream dedupes by id). */
  readonly prefix: string;
  private counter = 0;
  private readonly waiters = new Map<string, Waiter>();
  /** Per node: the last own mark proposed, as `<type>@<basis>`, so one view of a node is proposed once. */
  private readonly marked = new Map<string, string>();

  constructor(
    private readonly host: ProposerHost,
    connection: string,
  ) {
    this.prefix = `${host.replicaId}.${connection}.`;
  }

  /** Whether this replica proposed the entry. */
  own(entryId: string): boolean {
    return entryId.startsWith(this.prefix);
  }

  /** Proposes a lifecycle event; resolves with what applying it here returned, once it came back from the log. */
  propose<T>(event: LifecycleEvent): Promise<T> {
    return this.proposeEntry<T>((v, id) => ({ v, type: 'swarm.event', id, event }));
  }

  /**
   * Proposes an entry made by `make` (given its version and id); resolves with what applying it
   * here returned. `minFormat`: the least format version the entry has (a key binding is signed,
   * version 2); while the writers write below it, the call is refused (`Refused`), never written
   * at a version no replica takes it in.
   */
  proposeEntry<T>(make: (v: number, id: string) => LogEntry, minFormat = 1): Promise<T> {
    if (this.host.closed()) return Promise.reject(new ReplicationError('Closed', `replica "${this.host.replicaId}" of swarm "${this.host.name}" is closed`));
    const v = this.host.format();
    if (v < minFormat) return Promise.reject(new ReplicationError('Refused', `replica "${this.host.replicaId}" of swarm "${this.host.name}" writes format version ${v} now (a replica of the release before is live, or was within the liveness window): this entry is version ${minFormat} at least; try again once the writers write it (stats().format)`));
    const entry = make(v, this.nextId());
    const applied = new Promise<T>((resolve, reject) => this.waiters.set(entry.id, { resolve: resolve as (v: unknown) => void, reject, make }));
    this.publish(entry, this.host.proposeTimeoutMs).catch((error: Error) => this.settle(entry.id, undefined, error));
    return applied;
  }

  /**
   * An own entry was written at version 1 after the log's first signed entry, so every replica
   * skipped it (docs/replication.md, "Upgrades"): a call's entry is proposed again, under a new
   * id, at the format written now; a mark on `nodeId` may be proposed again on the same view.
   */
  again(entryId: string, nodeId: string | undefined): void {
    if (nodeId !== undefined) this.marked.delete(nodeId);
    const waiter = this.waiters.get(entryId);
    if (waiter === undefined || this.host.closed()) return;
    this.waiters.delete(entryId);
    const entry = waiter.make(this.host.format(), this.nextId());
    this.waiters.set(entry.id, waiter);
    this.publish(entry, this.host.proposeTimeoutMs).catch((error: Error) => this.settle(entry.id, undefined, error));
  }

  /**
   * A mark the local node actors made: proposed once on `basis` (the node's last entry applied
   * here), and only while connected (a cut-off replica's detector sees no heartbeats: its downs
   * are not news).
   */
  proposeMark(mark: OwnMark, basis: number): void {
    const event: LifecycleEvent = mark.type === 'node.eject' ? { type: 'node.down', nodeId: mark.nodeId, cause: 'ejected' } : mark;
    this.proposeOnView(mark.nodeId, mark.type, event, basis);
  }

  /** Proposes removing a member this replica forgot (down and unheard too long), once per view of the node. */
  proposeForget(nodeId: string, basis: number): void {
    this.proposeOnView(nodeId, 'node.removed', { type: 'node.removed', nodeId }, basis);
  }

  private proposeOnView(nodeId: string, kind: string, event: LifecycleEvent, basis: number): void {
    if (!this.host.connected() || this.host.closed()) return;
    const key = `${kind}@${basis}`;
    if (this.marked.get(nodeId) === key) return; // proposed already on this view of the node
    this.marked.set(nodeId, key);
    const entry: LogEntry = { v: this.host.format(), type: 'swarm.event', id: this.nextId(), event, basis };
    this.publish(entry, 2000).catch(() => {
      // Lost with the connection: reconciled after the reconnect.
      if (this.marked.get(nodeId) === key) this.marked.delete(nodeId);
    });
  }

  /**
   * A new entry id: the prefix, a counter and a random name. The id is the publish's
   * `Nats-Msg-Id`, so an id a client of the NATS server could guess would let it publish first
   * under it: the stream would drop the real entry as a duplicate and the call never settle.
   */
  private nextId(): string {
    return `${this.prefix}${++this.counter}.${randomName()}`;
  }

  /** Settles the call that proposed `entryId`, if it is pending here. */
  settle(entryId: string, result: unknown, error: Error | undefined): void {
    const waiter = this.waiters.get(entryId);
    if (waiter === undefined) return;
    this.waiters.delete(entryId);
    if (error !== undefined) waiter.reject(error);
    else waiter.resolve(result);
  }

  /** Rejects every pending call (the replica closed). */
  rejectAll(error: () => Error): void {
    for (const w of this.waiters.values()) w.reject(error());
    this.waiters.clear();
  }

  /** Puts a proposal on the log, retrying (same `Nats-Msg-Id`: the stream keeps one) until the deadline. */
  private async publish(entry: LogEntry, timeoutMs: number): Promise<void> {
    const { io, log } = this.host;
    const deadline = io.now() + timeoutMs;
    for (;;) {
      if (this.host.closed()) throw new ReplicationError('Closed', `replica "${this.host.replicaId}" of swarm "${this.host.name}" is closed`);
      try {
        // Signed afresh each attempt: a retry stored late is still within the skew of its signing (the stream keeps one copy per id).
        await log.publish(entry.id, encodeEntry(this.host.seal(entry)), Math.max(Math.min(1000, deadline - io.now()), 100));
        return;
      } catch (cause) {
        if (io.now() >= deadline) {
          throw new ReplicationError('Disconnected', `proposal ${entry.id} (${entry.type}) did not reach the log of swarm "${this.host.name}" within ${timeoutMs} ms`, { cause });
        }
        await new Promise<void>((resolve) => io.setTimeout(() => resolve(), 200));
      }
    }
  }
}
