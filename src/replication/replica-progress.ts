/**
 * Where every replica stands, shared (docs/replication.md, "Compaction"): each replica puts
 * `{ replica, seq, at, reads, snapshot? }` under the key `applied.<replicaId>` of its swarm's KV
 * bucket (`hecate_<name>`, beside the snapshot): the last log sequence it applied, when it said so
 * (its io clock, milliseconds since the epoch), the format versions it reads, and the last snapshot
 * it stored. The log is trimmed only below what every live replica has applied; a replica unheard
 * past the grace stops holding it back, and its key is dropped. Every replica watches the keys,
 * so reading the board costs no round trip. With the swarm secret announcements are signed; an
 * unsigned one (a replica of the release before, or without the secret) is heard only while the
 * log's floor is 1, the upgrade window (docs/replication.md, "Upgrades"), and dropped once the log
 * is signed.
 */
import { Bucket, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { QueuedIterator } from '@nats-io/transport-node';
import type { LogSigner } from './log-signer.js';

/** How far ahead of this replica's clock an announcement's `at` may be and still be heard (as a signed log entry's skew). */
export const ANNOUNCED_AHEAD_MS = 30_000;

/** One replica's announcement. */
export interface ReplicaProgress {
  readonly replica: string;
  /** The last log sequence it applied. */
  readonly seq: number;
  /** When it announced it (ms since the epoch, its clock). */
  readonly at: number;
  /** The format versions of entries and snapshots it reads. */
  readonly reads: readonly number[];
  /** The log sequence of the last snapshot it stored in the bucket, if any. */
  readonly snapshot?: number;
}

const PREFIX = 'applied.';

/** The announcements in one swarm's bucket, as the watch last delivered them. */
export class ProgressBoard {
  private readonly board = new Map<string, ReplicaProgress>();
  /** The replicas whose announcement on the board is unsigned (heard only while the floor is 1). */
  private readonly unsigned = new Set<string>();
  private watch: QueuedIterator<KvWatchEntry> | undefined;
  /**
   * Per replica and the versions it read (`<replica>|<reads>`): when (io clock) its announcement
   * was last seen live, or was withdrawn or replaced (write-format.ts, `recent`).
   */
  private readonly seen = new Map<string, { readonly replica: string; readonly reads: readonly number[]; readonly at: number }>();
  /** When (io clock) an announcement carrying a signature (a replica with the secret) was last seen live, replaced or withdrawn. */
  private secretAt: number | undefined;
  /** Announcements dropped because the swarm secret's signature did not verify. */
  rejected = 0;
  /** Whether the watch runs (it ends when its consumer fails: nothing is heard then). */
  watching = false;

  /**
   * @param signer with the swarm secret: announcements are signed, and only signed ones are read once the log is signed
   * @param floor the log's floor (write-format.ts): while it is below 2, unsigned announcements are heard too
   * @param now this replica's io clock (ms since the epoch)
   */
  constructor(
    private readonly kv: KV,
    private readonly signer?: LogSigner,
    private readonly floor: () => number = () => 1,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** Starts watching the announcements (every one there now, then each change). */
  async open(): Promise<void> {
    const watch = (this.watch = await this.kv.watch({ key: `${PREFIX}>` }));
    this.watching = true;
    void (async () => {
      for await (const e of watch) {
        const replica = e.key.slice(PREFIX.length);
        const p = e.operation === 'PUT' && e.length > 0 ? this.parse(e) : undefined;
        this.gone(replica);
        this.unsigned.delete(replica);
        if (p === undefined) this.board.delete(replica);
        else this.board.set(replica, p.progress);
        if (p?.signed === false) this.unsigned.add(replica);
      }
    })()
      .catch(() => undefined)
      .finally(() => {
        if (this.watch === watch) this.watching = false;
      });
  }

  /** Announces this replica's progress (replaces its previous one). */
  async announce(progress: ReplicaProgress): Promise<void> {
    this.gone(progress.replica);
    this.board.set(progress.replica, progress);
    this.unsigned.delete(progress.replica);
    await this.kv.put(`${PREFIX}${progress.replica}`, JSON.stringify(this.signer !== undefined ? this.signer.signed('progress', progress) : progress));
  }

  /** Withdraws a replica's announcement (it closed, or went silent past the grace). */
  async withdraw(replica: string): Promise<void> {
    this.gone(replica);
    this.board.delete(replica);
    this.unsigned.delete(replica);
    await this.kv.delete(`${PREFIX}${replica}`);
  }

  /** Drops the markers withdrawn announcements left, older than `olderMs`. */
  async purgeMarkers(olderMs: number): Promise<void> {
    if (this.kv instanceof Bucket) await this.kv.purgeDeletes(olderMs);
  }

  /**
   * Every announcement, split at `now - graceMs`: `live` were heard since (unsigned ones only while
   * the floor is 1), `silent` not; one said more than {@link ANNOUNCED_AHEAD_MS} ahead of `now` is
   * silent (a forged one would hold the trim and the format for ever), but is remembered as seen
   * now (`recent`, this replica's clock): a live replica whose clock runs ahead still holds the
   * format at each read, a forgery only one window past its withdrawal at the next boundary.
   */
  read(now: number, graceMs: number): { live: ReplicaProgress[]; silent: ReplicaProgress[] } {
    const live: ReplicaProgress[] = [];
    const silent: ReplicaProgress[] = [];
    const hearsUnsigned = this.floor() < 2;
    for (const [replica, p] of this.board) {
      const ahead = p.at > now + ANNOUNCED_AHEAD_MS;
      const heard = p.at >= now - graceMs && !ahead;
      // Once the log is signed, an unsigned announcement is not live; an old one is still cleared away.
      if (heard && !hearsUnsigned && this.unsigned.has(replica)) continue;
      if (heard && (p as { sig?: unknown }).sig !== undefined) this.secretAt = this.now();
      if (heard || (ahead && (hearsUnsigned || !this.unsigned.has(replica)))) this.seen.set(`${replica}|${p.reads.join(',')}`, { replica, reads: p.reads, at: this.now() });
      (heard ? live : silent).push(p);
    }
    this.recent(graceMs); // forgets the ones older than the window (replica ids change at each restart)
    return { live, silent };
  }

  /**
   * The announcements seen live, withdrawn or replaced within the last `windowMs` (io clock), with
   * how long ago (write-format.ts, `recent`); older ones are forgotten.
   */
  recent(windowMs: number): { readonly replica: string; readonly reads: readonly number[]; readonly agoMs: number }[] {
    const now = this.now();
    const out: { readonly replica: string; readonly reads: readonly number[]; readonly agoMs: number }[] = [];
    for (const [key, { replica, reads, at }] of this.seen) {
      if (now - at >= windowMs) this.seen.delete(key);
      else out.push({ replica, reads, agoMs: now - at });
    }
    return out;
  }

  /** Whether an announcement carrying a signature (a replica with the secret; not verified without it) was live, replaced or withdrawn within the last `windowMs` (io clock). */
  secretAround(windowMs: number): boolean {
    return this.secretAt !== undefined && this.now() - this.secretAt < windowMs;
  }

  /** Whether the replica's announcement is signed with the secret (or this replica has none: every one counts alike). */
  signed(replica: string): boolean {
    return !this.unsigned.has(replica) || this.signer === undefined;
  }

  /** Stops watching. */
  close(): void {
    this.watching = false;
    this.watch?.stop();
  }

  /** The replica's announcement on the board leaves it (withdrawn, or replaced): remembered as seen now, whatever its age (a stale view may call a live one silent) or however far ahead its clock said it (this replica's time counts). */
  private gone(replica: string): void {
    const p = this.board.get(replica);
    if ((p as { sig?: unknown } | undefined)?.sig !== undefined) this.secretAt = this.now();
    if (p !== undefined && (this.floor() < 2 || !this.unsigned.has(replica))) this.seen.set(`${replica}|${p.reads.join(',')}`, { replica, reads: p.reads, at: this.now() });
  }

  /** An announcement's value and whether it is signed; undefined when it is not one to hear (a bad signature, or unsigned on a signed log). */
  private parse(e: KvWatchEntry): { readonly progress: ReplicaProgress; readonly signed: boolean } | undefined {
    try {
      const p = e.json<ReplicaProgress>();
      if (p === null || typeof p !== 'object' || !Number.isInteger(p.seq) || typeof p.at !== 'number' || !Array.isArray(p.reads)) return undefined;
      if (this.signer === undefined) return { progress: p, signed: false };
      if (this.signer.verify('progress', p)) return { progress: p, signed: true };
      // Unsigned: a replica without the secret (the release before), heard during the upgrade window only.
      if ((p as { sig?: unknown }).sig === undefined && this.floor() < 2) return { progress: p, signed: false };
      this.rejected++;
      return undefined;
    } catch {
      return undefined;
    }
  }
}
