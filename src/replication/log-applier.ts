/**
 * A replica's side of the log (docs/replication.md): builds the local Swarm from the genesis (or
 * a stored snapshot of it) and applies every later entry through it, each sequence once, in
 * stream order, as every replica does; counts what it applied, skipped and refused.
 */
import { applyEvent, persistSwarm, restoreSwarm } from '../persistence/persist-swarm.js';
import type { PersistedSwarm } from '../persistence/persisted.js';
import { Swarm } from '../runtime/swarm.js';
import type { SwarmOptions } from '../runtime/types.js';
import { KeyBindingTable } from './key-binding-table.js';
import { applyMove } from './apply-move.js';
import type { LogAcceptance } from './log-acceptance.js';
import { checkEntry, eventNode, parseEntry, type LogEntry } from './log-entry.js';
import type { ReplicationEmitted, ReplicationStats } from './replication-events.js';
import { ReplicationError } from './replication-error.js';
import type { SnapshotStore, StoredSnapshot } from './snapshot-store.js';

/** A swarm's first log entry. */
export type GenesisEntry = Extract<LogEntry, { type: 'swarm.genesis' }>;

/** What applying the log tells the rest of the replica. */
export interface ApplierHost {
  /** The swarm's name and this replica's, for messages. */
  readonly name: string;
  /** The local Swarm's options (its clock, inspection, lease ids). */
  readonly swarmOptions: SwarmOptions;
  /** The local Swarm was built: listen to it. */
  built(swarm: Swarm): void;
  /** An entry this replica proposed came back applied (`error`: refused); settles the call. */
  settle(entryId: string, result: unknown, error: Error | undefined): void;
  /** Whether this replica proposed the entry. */
  own(entryId: string): boolean;
  /** An own mark on `nodeId` was stale: look at the node again. */
  stale(nodeId: string): void;
  /**
   * An own entry written at version 1 came after the log's first signed entry (a writer that had not
   * seen the upgrade yet): skipped on every replica, so propose it again at the format written now
   * (`nodeId`: a mark's node, looked at again).
   */
  outdated?(entryId: string, nodeId: string | undefined): void;
  /** An entry was applied, up to `seq`, with `pending` messages still behind it on the stream. */
  advanced(seq: number, pending: number): void;
  /** A snapshot boundary was applied (`stored`: this replica's save of it went in). */
  boundary(seq: number, stored: boolean): void;
  /** The format version new snapshots are written in. */
  format(): number;
  /** The format versions this replica reads (docs/replication.md, "Upgrades"). @defaultValue [1] */
  readonly reads?: readonly number[];
  /** With the swarm secret: which entries are signed as they must be (log-acceptance.ts). */
  readonly acceptance?: LogAcceptance;
  emit(event: ReplicationEmitted): void;
}

/** The local Swarm and where it stands on the log. */
export class LogApplier {
  /** The local Swarm, once the genesis (or a snapshot) built it. */
  swarm: Swarm | undefined;
  /** The last stream sequence applied. */
  applied = 0;
  /** Per node: the last sequence of an entry applied on it (the basis own marks are checked against). */
  readonly touched = new Map<string, number>();
  /** The log's genesis, once built. */
  genesis: GenesisEntry | undefined;
  /** The agent id → key bindings the log holds. */
  readonly bindings = new KeyBindingTable();
  /** Messages still on the stream behind the last one delivered. */
  private lag = 0;
  private snapshotSeq = 0;
  /** With the secret: the format version of the stream's last entry at connect if it was signed (2 or more), else 1. */
  private tailFormat = 1;
  private entries = 0;
  private redelivered = 0;
  private staleMarks = 0;
  private refused = 0;
  private rejected = 0;

  private snapshots: { readonly store: SnapshotStore; readonly every: number } | undefined;

  constructor(private readonly host: ApplierHost) {}

  /** Saves the swarm's snapshot in `store` after every `every` entries. */
  saveTo(store: SnapshotStore, every: number): void {
    this.snapshots = { store, every };
  }

  /**
   * The log's floor (write-format.ts): the highest format version applied so far, the genesis
   * included. Only signed entries are version 2 or more, and the acceptance remembers (in the
   * snapshot too) the highest applied; a replica without the secret reads version 1 only.
   */
  get floor(): number {
    return Math.max(this.host.acceptance?.top ?? 1, this.tailFormat);
  }

  /**
   * The stream's last entry when the replica connected: with the secret, if it is a signed
   * version-2 one, the log is signed, so the floor is 2 while the replica catches up on an unsigned
   * prefix too (unsigned heartbeats and announcements are not taken meanwhile).
   */
  tail(data: Uint8Array | undefined): void {
    const acceptance = this.host.acceptance;
    if (acceptance === undefined || data === undefined) return;
    try {
      const value = parseEntry(data, 0);
      this.tailFormat = acceptance.signed(value) ? ((value as { v: number }).v) : 1;
    } catch {
      // not JSON: says nothing
    }
  }

  /** The counters, as `ReplicatedSwarm.stats()` shows them. */
  stats(): Omit<ReplicationStats, 'rejectedMessages' | 'format' | 'heldBy'> {
    return { applied: this.applied, lag: this.lag, snapshot: this.snapshotSeq, entries: this.entries, redelivered: this.redelivered, staleMarks: this.staleMarks, refused: this.refused, rejected: this.rejected, floor: this.floor };
  }

  /**
   * One stream message, stored at `storedAt` (the stream's time, ms since the epoch). Before the
   * genesis, anything else is a `BadLog` thrown (the replica cannot start); after it, bytes no
   * replica writes are skipped alike on every replica. With the swarm secret, an entry not signed
   * as it must be is skipped and counted (`rejected`), before or after the genesis.
   */
  receive(seq: number, data: Uint8Array, pending: number, storedAt = 0): void {
    if (seq <= this.applied) {
      this.redelivered++;
      return;
    }
    this.lag = pending;
    if (this.swarm !== undefined && seq > this.applied + 1) {
      // Entries applied + 1 … seq - 1 were trimmed while this replica was silent: it cannot go on from here.
      throw new ReplicationError('Trimmed', `replica of swarm "${this.host.name}" applied up to ${this.applied}, but the log now starts at ${seq} (trimmed while it was unheard): connect it again to start from the KV snapshot`);
    }
    const acceptance = this.host.acceptance;
    let entry: LogEntry;
    try {
      const value = parseEntry(data, seq);
      if (acceptance !== undefined) {
        // Before its version is read: a forged entry of an unknown version must not halt anyone.
        const verdict = acceptance.accept(value, seq, storedAt);
        if (!verdict.ok) {
          const { id, basis, event } = value as { id?: unknown; basis?: unknown; event?: { type?: unknown; nodeId?: unknown } };
          this.reject(seq, verdict.why, verdict.verified ? id : undefined, pending);
          if (verdict.outdated === true && typeof id === 'string' && this.host.own(id)) this.host.outdated?.(id, basis !== undefined && typeof event?.nodeId === 'string' ? event.nodeId : undefined);
          return;
        }
      }
      entry = checkEntry(value, seq, this.host.reads);
    } catch (error) {
      if (acceptance !== undefined && !(error instanceof ReplicationError && error.code === 'UnknownVersion')) {
        // Not JSON, or unsigned: no writer of a signed log wrote it.
        this.reject(seq, error instanceof Error ? error.message : String(error), undefined, pending);
        return;
      }
      // A version this release does not read: skipping it would diverge from the replicas that do.
      if (this.swarm === undefined || (error instanceof ReplicationError && error.code === 'UnknownVersion')) throw error;
      this.applied = seq;
      this.refused++;
      return;
    }
    if (this.swarm === undefined) {
      if (entry.type !== 'swarm.genesis') throw new ReplicationError('BadLog', `log entry ${seq} of swarm "${this.host.name}" comes before any genesis (${entry.type})`);
      try {
        this.build(entry);
      } catch (cause) {
        throw new ReplicationError('BadLog', `the genesis of swarm "${this.host.name}" does not build a swarm: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
      }
    } else {
      this.apply(this.swarm, seq, entry);
    }
    this.applied = seq;
    this.entries++;
    if (this.snapshots !== undefined && seq % this.snapshots.every === 0) {
      const genesis = this.genesis;
      const v = this.host.format();
      const signed = v >= 2 && acceptance !== undefined ? { bindings: this.bindings.entries(), acceptance: acceptance.save() } : {};
      const snapshot: StoredSnapshot = { v, seq, swarm: persistSwarm(this.swarm as Swarm), touched: [...this.touched], ...(genesis !== undefined ? { genesis } : {}), ...signed };
      void this.snapshots.store.save(snapshot).then((stored) => this.host.boundary(seq, stored));
    }
    this.host.advanced(seq, pending);
  }

  /**
   * Starts from a stored snapshot: the genesis (the log's first entry) with the persisted state,
   * then only the entries after it. A snapshot that does not restore (another genesis) is ignored:
   * the replica replays the whole log.
   */
  restore(entry: LogEntry, stored: StoredSnapshot): void {
    if (entry.type !== 'swarm.genesis') return;
    try {
      this.build(entry, stored.swarm);
    } catch {
      this.swarm?.stop();
      this.swarm = undefined;
      return;
    }
    this.applied = stored.seq;
    this.snapshotSeq = stored.seq;
    for (const [id, seq] of stored.touched) this.touched.set(id, seq);
    this.bindings.restore(stored.bindings);
    this.host.acceptance?.restore(stored.acceptance ?? stored.admission);
  }

  /** Skips the entry at `seq` as not signed as it must be; a verified one of this replica's settles its call. */
  private reject(seq: number, why: string, verifiedId: unknown, pending: number): void {
    this.applied = seq;
    this.rejected++;
    const error = new ReplicationError('Rejected', why);
    if (typeof verifiedId === 'string') this.host.settle(verifiedId, undefined, error);
    this.host.emit({ type: 'replication.rejected', seq, error });
    // Before the genesis nothing is caught up with: the link waits for a swarm to say so.
    if (this.swarm !== undefined) this.host.advanced(seq, pending);
  }

  /** Builds the local Swarm from the genesis, or from a snapshot of it. */
  private build(entry: GenesisEntry, restore?: PersistedSwarm): void {
    // Its node actors' own marks are handed over (`node.mark`): the log decides when each applies.
    const policy = { defersOwnMarks: true };
    const options = this.host.swarmOptions;
    this.genesis = entry;
    this.swarm = restore !== undefined ? restoreSwarm(entry.profiles, entry.config, restore, options, policy) : new Swarm(entry.profiles, entry.config, { ...options, seed: entry.seed }, policy);
    this.host.built(this.swarm);
  }

  /** Applies one entry through the local Swarm; settles the proposer's call if it is this replica's. */
  private apply(swarm: Swarm, seq: number, entry: LogEntry): void {
    if (entry.type === 'swarm.genesis') {
      this.refused++;
      const error = new ReplicationError('BadLog', `log entry ${seq}: a second genesis`);
      this.host.settle(entry.id, undefined, error);
      this.host.emit({ type: 'replication.applied', seq, entry, error });
      return;
    }
    if (entry.type === 'swarm.binding') {
      this.host.settle(entry.id, this.bindings.apply(entry.nodeId, entry.key), undefined);
      this.host.emit({ type: 'replication.applied', seq, entry });
      return;
    }
    if (entry.type === 'swarm.rebalance') {
      // A move event: taken by the statechart or refused (it does not fit), alike on every replica.
      const error = applyMove(swarm, entry.event);
      if (error !== undefined) this.refused++;
      this.host.settle(entry.id, undefined, error);
      this.host.emit(error !== undefined ? { type: 'replication.applied', seq, entry, error } : { type: 'replication.applied', seq, entry });
      return;
    }
    const nodeId = eventNode(entry.event);
    // (A node no longer a member is stale for any mark: its table entry went with it.)
    if (entry.basis !== undefined && nodeId !== undefined && (swarm.node(nodeId) === undefined || (this.touched.get(nodeId) ?? 0) !== entry.basis)) {
      // A mark decided on an older view of the node: another entry on it came first. Dropped alike everywhere.
      if (this.host.own(entry.id)) {
        this.staleMarks++;
        this.host.stale(nodeId);
      }
      this.host.emit({ type: 'replication.applied', seq, entry });
      return;
    }
    let result: unknown;
    let error: Error | undefined;
    try {
      result = applyEvent(swarm, entry.event);
    } catch (e) {
      error = e instanceof Error ? e : new Error(String(e));
      this.refused++;
    }
    // A removed node leaves the snapshot's table too (a node added again under its id starts afresh).
    if (nodeId !== undefined) {
      if (entry.event.type === 'node.removed' && error === undefined) this.touched.delete(nodeId);
      else this.touched.set(nodeId, seq);
    }
    this.host.settle(entry.id, result, error);
    this.host.emit(error !== undefined ? { type: 'replication.applied', seq, entry, error } : { type: 'replication.applied', seq, entry });
  }
}
