/**
 * Compaction of a replicated swarm's log (docs/replication.md, "Compaction"): every replica
 * announces the sequence it applied (and the last snapshot it stored); at each snapshot boundary
 * the stream is trimmed below the least sequence any live replica applied (and the latest stored
 * snapshot's), minus a margin, and the agent directory drops the agents that are no longer members.
 */
import { Bucket, Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection, QueuedIterator } from '@nats-io/transport-node';
import type { Clock } from '../runtime/types.js';
import { directoryBucket, idToKey, keyToId } from './agent-directory.js';
import type { LogSigner } from './log-signer.js';
import type { LogStream } from './log-stream.js';
import { readHeld } from './held-snapshot.js';
import { ProgressBoard } from './replica-progress.js';
import { trimSnapshot } from './trim-snapshot.js';
import { writeFormat } from './write-format.js';

/** Directory markers purged per boundary at most (each is one request). */
const MARKERS_PER_PRUNE = 2000;
/** Marker purge requests in flight at once. */
const MARKERS_AT_ONCE = 25;

/** What compaction needs of the replica. */
export interface CompactorHost {
  readonly swarm: string;
  readonly replicaId: string;
  readonly io: Clock;
  readonly log: LogStream;
  readonly nc: NatsConnection;
  /** Entries kept below the trim point. */
  readonly marginEntries: number;
  /** A replica unheard this long no longer holds the trim back. */
  readonly graceMs: number;
  /** A directory entry of a non-member is dropped once written this long ago (a join puts it before its entry is applied). */
  readonly directoryGraceMs: number;
  /** The last sequence this replica applied. */
  applied(): number;
  /** Whether `id` is a member of the swarm now (its directory entry stays). */
  member(id: string): boolean;
  /** The format versions this replica reads and writes (docs/replication.md, "Upgrades"). */
  readonly reads: readonly number[];
  readonly writes: readonly number[];
  /** The log's floor: the highest format version applied so far (write-format.ts). */
  floor(): number;
  /** With the swarm secret: announcements are signed, and only signed ones count. */
  readonly signer?: LogSigner;
}

/** One replica's part in keeping the log short. */
export class LogCompactor {
  /** Entries removed by this replica's trims so far. */
  trimmed = 0;
  private readonly board: ProgressBoard;
  /** Live replicas at the last announcement, this one included (admission's share: docs/admission.md). */
  liveReplicas = 1;
  private directory: KV | undefined | null;
  private directoryWatch: QueuedIterator<KvWatchEntry> | undefined;
  /** Directory keys and when each was written, as the watch delivered them. */
  private readonly written = new Map<string, number>();
  private trimming = false;
  private again = false;
  /** Nodes the log removed, and when: their directory entries are looked up and deleted after the grace (the watch may miss one under load). */
  private readonly removedIds = new Map<string, number>();
  /** Directory keys deleted, and when, as the watch delivered them: their markers are purged after the grace. */
  private readonly markers = new Map<string, { readonly at: number; readonly revision: number }>();
  private recheckedFor = 0;
  private pruning = false;
  private purgingMarkers = false;
  private rechecks = 0;
  private closed = false;
  /** Whether the watch was opened once (after that, one that ends is opened again at each announcement). */
  private opened = false;
  private reopening = false;
  /** The last snapshot this replica stored. */
  private storedSeq = 0;
  /** When this replica started hearing the announcements (io clock); undefined until the watch is open. */
  private hearingSince: number | undefined;

  constructor(
    private readonly host: CompactorHost,
    private readonly kv: KV,
  ) {
    this.board = new ProgressBoard(kv, host.signer, () => host.floor(), () => host.io.now());
  }

  /**
   * The format version to write now (docs/replication.md, "Upgrades"): never below the log's
   * floor, above it only after a whole liveness window of announcements heard without a break (on
   * NATS, the watch running), only a version every live replica announced it reads, and a whole
   * window after an announcement lacking it was last live or withdrawn.
   */
  format(): number {
    const { io, graceMs, writes } = this.host;
    const now = io.now();
    const heardForMs = this.hearingSince === undefined || !this.board.watching ? 0 : now - this.hearingSince;
    const liveReads = this.board.read(now, graceMs).live.map((p) => p.reads);
    return writeFormat({ writes, floor: this.host.floor(), heardForMs, windowMs: graceMs, liveReads, recent: this.board.recent(graceMs) });
  }

  /** The replicas whose announcements, live or within the last window, lack the newest format this replica writes (`stats().heldBy`). */
  heldBy(): string[] {
    const { io, graceMs, writes } = this.host;
    const newest = writes[writes.length - 1] as number;
    if (this.host.floor() >= newest) return [];
    const held = new Set<string>();
    for (const p of this.board.read(io.now(), graceMs).live) if (!p.reads.includes(newest)) held.add(p.replica);
    for (const r of this.board.recent(graceMs)) if (!r.reads.includes(newest)) held.add(r.replica);
    return [...held].sort();
  }

  /**
   * The connection to NATS dropped or came back: announcements were not heard meanwhile, so the
   * liveness window starts again from the reconnect (a watch that ended is opened again).
   */
  relisten(change: 'disconnect' | 'reconnect'): void {
    if (this.closed) return;
    this.hearingSince = undefined;
    if (change === 'disconnect') return;
    if (this.board.watching) this.hearingSince = this.host.io.now();
    else this.reopen();
  }

  /** Opens the announcements' watch again if it ended (at a reconnect, and at each announcement while an attempt failed). */
  private reopen(): void {
    if (this.closed || this.board.watching || this.reopening) return;
    this.reopening = true;
    void this.open()
      .catch(() => undefined)
      .finally(() => (this.reopening = false));
  }

  /** Without the secret: whether a replica with it was live within the last window (its signed snapshot in the bucket is kept, and bounds the trim). */
  secretAround(): boolean {
    return this.host.signer === undefined && this.board.secretAround(this.host.graceMs);
  }

  /** Announcements dropped for their signature. */
  get rejected(): number {
    return this.board.rejected;
  }

  /** Announces this replica's applied sequence and the formats it reads, and learns the others' (the write format follows). */
  async announce(): Promise<void> {
    if (this.closed) return;
    const { io, replicaId, graceMs } = this.host;
    if (this.opened) this.reopen(); // a watch that ended, or an open that failed, is tried again
    await this.board.announce({ replica: replicaId, seq: this.host.applied(), at: io.now(), reads: this.host.reads, ...(this.storedSeq > 0 ? { snapshot: this.storedSeq } : {}) });
    const { live } = this.board.read(io.now(), graceMs);
    this.liveReplicas = Math.max(1, live.length);
  }

  /** A `node.removed` entry on `nodeId` was applied: its directory entry goes at a later boundary. */
  removed(nodeId: string): void {
    this.removedIds.set(nodeId, this.host.io.now());
  }

  /** Starts watching the other replicas' announcements. */
  async open(): Promise<void> {
    this.opened = true;
    await this.board.open();
    this.hearingSince = this.host.io.now();
  }

  /** Withdraws this replica's announcement and stops watching (it closes). */
  async withdraw(): Promise<void> {
    this.closed = true;
    this.board.close();
    this.directoryWatch?.stop();
    await this.board.withdraw(this.host.replicaId);
  }

  /** This replica stored the snapshot at `seq`: announces it, then trims. */
  async stored(seq: number): Promise<number> {
    this.storedSeq = Math.max(this.storedSeq, seq);
    return this.boundary();
  }

  /**
   * At a snapshot boundary (every replica with snapshots, whoever stores it) and after a store:
   * announces, then trims the stream below `min(latest stored snapshot, every live replica's
   * applied) - margin`, forgets silent replicas' announcements, and prunes the agent directory.
   * Whichever replica announces last at a boundary sees every other there, so the stream is cut
   * to about `trimMargin` entries behind the snapshot. Resolves with the trim point (0: none).
   */
  async boundary(): Promise<number> {
    if (this.closed) return 0;
    if (this.trimming) {
      this.again = true; // once the one under way ends: it may have read the board before this
      return 0;
    }
    this.trimming = true;
    try {
      await this.announce();
      const { io, graceMs, marginEntries, log } = this.host;
      const { live, silent } = this.board.read(io.now(), graceMs);
      for (const p of silent) await this.board.withdraw(p.replica);
      if (silent.length > 0) void this.board.purgeMarkers(graceMs).catch(() => undefined);
      // With the secret, only snapshots a replica with it stored count (one without it may have won the save: a restart with the secret cannot start from it).
      const announced = Math.max(this.storedSeq, ...live.map((p) => (this.board.signed(p.replica) ? (p.snapshot ?? 0) : 0)));
      // Never past a snapshot a replica restarted with the secret can start from (its own may have been overwritten by one without it).
      const secretAround = this.secretAround();
      const held = this.host.signer !== undefined || secretAround ? await readHeld(this.kv, this.host.signer) : undefined;
      const snapshot = trimSnapshot({ announced, secret: this.host.signer !== undefined, secretAround, held });
      const floor = Math.min(snapshot, this.host.applied(), ...live.map((p) => p.seq));
      const below = floor - marginEntries + 1;
      const { first } = await log.bounds();
      let cut = 0;
      if (snapshot > 0 && below > first) {
        this.trimmed += await log.trim(below);
        cut = below;
      }
      // Someone not at the snapshot yet (or its announcement not seen yet): look again every
      // 250 ms, up to 20 times per snapshot (then the next boundary or announcement will).
      if (floor < snapshot) {
        if (this.recheckedFor !== snapshot) {
          this.recheckedFor = snapshot;
          this.rechecks = 0;
        }
        if (this.rechecks++ < 20) io.setTimeout(() => void this.boundary(), 250);
      }
      if (!this.pruning) {
        this.pruning = true;
        void this.prune().finally(() => (this.pruning = false)); // beside the trim: a directory's markers can take many requests
      }
      return cut;
    } catch {
      return 0; // cut off meanwhile: the next boundary trims
    } finally {
      this.trimming = false;
      if (this.again) {
        this.again = false;
        void this.boundary();
      }
    }
  }

  /** Removes directory entries of agents that are not members and were written more than the grace ago (a join in progress puts its entry first). */
  private async prune(): Promise<void> {
    if (this.directory === null) return;
    if (this.directory === undefined) {
      try {
        const kv = await new Kvm(this.host.nc).open(directoryBucket(this.host.swarm));
        await kv.status();
        const watch = (this.directoryWatch = await kv.watch());
        void (async () => {
          for await (const e of watch) {
            if (e.operation === 'PUT') {
              this.written.set(e.key, e.created.getTime());
              this.markers.delete(e.key);
            } else {
              this.written.delete(e.key);
              this.markers.set(e.key, { at: e.created.getTime(), revision: e.revision });
            }
          }
        })().catch(() => undefined);
        this.directory = kv;
      } catch {
        this.directory = null; // no directory (a library swarm without serve): nothing to prune
        return;
      }
    }
    try {
      const old = this.host.io.now() - this.host.directoryGraceMs;
      for (const [id, at] of [...this.removedIds]) {
        if (at >= old) continue;
        const k = idToKey(id);
        // The watch showed it (deleted already, or in the table the next loop goes through): no lookup.
        if (!this.host.member(id) && !this.markers.has(k) && !this.written.has(k)) {
          const e = await this.directory.get(idToKey(id));
          if (e !== null && e.operation === 'PUT' && e.created.getTime() < old) await this.directory.delete(idToKey(id));
        }
        this.removedIds.delete(id);
      }
      for (const [k, created] of [...this.written]) {
        if (created < old && !this.host.member(keyToId(k))) {
          await this.directory.delete(k);
          if (this.written.get(k) === created) this.written.delete(k); // (the watch may have said so first)
        }
      }
    } catch {
      // cut off meanwhile: the next boundary prunes
    }
    if (!this.purgingMarkers) {
      this.purgingMarkers = true;
      void this.purgeMarkers().finally(() => (this.purgingMarkers = false));
    }
  }

  /**
   * Purges the markers deleted directory keys leave, once every watcher had time to see them
   * (older than the replica grace): one request each, so at most MARKERS_PER_PRUNE per boundary,
   * MARKERS_AT_ONCE at a time, beside the deletions.
   */
  private async purgeMarkers(): Promise<void> {
    try {
      const dir = this.directory;
      if (dir instanceof Bucket) {
        const seen = this.host.io.now() - this.host.graceMs;
        const due = [...this.markers].filter(([, m]) => m.at < seen).slice(0, MARKERS_PER_PRUNE);
        // MARKERS_AT_ONCE requests in flight: one at a time could not keep up with a busy directory.
        for (let i = 0; i < due.length; i += MARKERS_AT_ONCE) {
          await Promise.all(
            due.slice(i, i + MARKERS_AT_ONCE).map(async ([k, { revision }]) => {
              // Up to the marker only: an entry put again since (a higher revision) stays.
              await this.host.log.jsm.streams.purge(dir.stream, { filter: dir.subjectForKey(k), seq: revision + 1 });
              if (this.markers.get(k)?.revision === revision) this.markers.delete(k);
            }),
          );
        }
      }
    } catch {
      // cut off meanwhile: the next boundary prunes
    }
  }
}
