import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { PersistedSwarm } from '../persistence/persisted.js';

/**
 * A replicated swarm's snapshot in a JetStream KV bucket (`hecate_<name>`, key `snapshot`): the
 * local Swarm's `persist()` after applying the log up to `seq`, with what else the log decides
 * (each node's last entry, the basis own marks are checked against). A starting replica loads it
 * and replays only the entries after `seq` (docs/replication.md).
 */
export interface StoredSnapshot {
  readonly v: 1;
  /** The last log sequence the snapshot reflects. */
  readonly seq: number;
  readonly swarm: PersistedSwarm;
  /** Each node's last applied entry's sequence. */
  readonly touched: readonly (readonly [string, number])[];
}

const KEY = 'snapshot';
const encoder = new TextEncoder();

/** The bucket of one swarm's snapshot: load the latest, save a later one (never an earlier). */
export class SnapshotStore {
  private saving = false;

  private constructor(private readonly kv: KV) {}

  /** Opens the swarm's bucket, creating it (one value of history, file storage) if missing. */
  static async open(nc: NatsConnection, swarm: string): Promise<SnapshotStore> {
    return new SnapshotStore(await new Kvm(nc).create(`hecate_${swarm}`, { history: 1 }));
  }

  /** The stored snapshot, or undefined when there is none or it is not one (a replica then replays the log). */
  async load(): Promise<StoredSnapshot | undefined> {
    const entry = await this.kv.get(KEY);
    if (entry === null || entry.operation !== 'PUT' || entry.length === 0) return undefined;
    try {
      const value = entry.json<StoredSnapshot>();
      return value?.v === 1 && Number.isInteger(value.seq) && Array.isArray(value.touched) ? value : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Saves `snapshot` unless a save is under way or the bucket holds one at least as recent;
   * compare-and-set on the bucket's revision, so two replicas saving at once keep the later.
   * Resolves with whether it was stored.
   */
  async save(snapshot: StoredSnapshot): Promise<boolean> {
    if (this.saving) return false;
    this.saving = true;
    try {
      const current = await this.kv.get(KEY);
      const data = encoder.encode(JSON.stringify(snapshot));
      if (current === null || current.operation !== 'PUT') {
        await this.kv.create(KEY, data);
        return true;
      }
      let stored = 0;
      try {
        stored = current.json<StoredSnapshot>().seq;
      } catch {
        // not a snapshot: overwrite it
      }
      if (stored >= snapshot.seq) return false;
      await this.kv.update(KEY, data, current.revision);
      return true;
    } catch {
      return false; // another replica saved first, or the connection went: the next one will do
    } finally {
      this.saving = false;
    }
  }
}
