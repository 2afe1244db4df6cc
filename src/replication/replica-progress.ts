/**
 * Where every replica stands, shared (docs/replication.md, "Compaction"): each replica puts
 * `{ replica, seq, at, reads }` under the key `applied.<replicaId>` of its swarm's KV bucket
 * (`hecate_<name>`, beside the snapshot): the last log sequence it applied, when it said so (its
 * io clock, milliseconds since the epoch), and the format versions it reads. The log is trimmed
 * only below what every live replica has applied; a replica unheard past the grace stops holding
 * it back, and its key is dropped.
 */
import { Bucket, type KV } from '@nats-io/kv';

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

/** The announcements in one swarm's bucket. */
export class ProgressBoard {
  constructor(private readonly kv: KV) {}

  /** Announces this replica's progress (replaces its previous one). */
  async announce(progress: ReplicaProgress): Promise<void> {
    await this.kv.put(`${PREFIX}${progress.replica}`, JSON.stringify(progress));
  }

  /** Withdraws a replica's announcement (it closed: it holds nothing back any more). */
  async withdraw(replica: string): Promise<void> {
    await this.kv.delete(`${PREFIX}${replica}`);
  }

  /** Drops the markers withdrawn announcements left, older than `olderMs`. */
  async purgeMarkers(olderMs: number): Promise<void> {
    if (this.kv instanceof Bucket) await this.kv.purgeDeletes(olderMs);
  }

  /**
   * Every announcement, split at `now - graceMs`: `live` were heard since, `silent` not (their keys
   * are for {@link ProgressBoard.withdraw}).
   */
  async read(now: number, graceMs: number): Promise<{ live: ReplicaProgress[]; silent: ReplicaProgress[] }> {
    const live: ReplicaProgress[] = [];
    const silent: ReplicaProgress[] = [];
    const keys: string[] = [];
    for await (const k of await this.kv.keys(`${PREFIX}>`)) keys.push(k);
    for (const k of keys.sort()) {
      const e = await this.kv.get(k);
      if (e === null || e.operation !== 'PUT' || e.length === 0) continue;
      let p: ReplicaProgress;
      try {
        p = e.json<ReplicaProgress>();
      } catch {
        continue;
      }
      if (p === null || typeof p !== 'object' || !Number.isInteger(p.seq) || typeof p.at !== 'number' || !Array.isArray(p.reads)) continue;
      (p.at >= now - graceMs ? live : silent).push(p);
    }
    return { live, silent };
  }
}
