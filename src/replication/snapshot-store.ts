import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { describeHeld } from './held-snapshot.js';
import type { PersistedSwarm } from '../persistence/persisted.js';
import type { AcceptanceState } from './log-acceptance.js';
import { UNSIGNED_FORMATS, unknownFormat, type LogEntry } from './log-entry.js';
import type { LogSigner } from './log-signer.js';

/**
 * A replicated swarm's snapshot in a JetStream KV bucket (`hecate_<name>`, key `snapshot`): the
 * local Swarm's `persist()` after applying the log up to `seq`, with what else the log decides
 * (each node's last entry, the basis own marks are checked against) and the log's genesis (the
 * stream's first entry, gone once the stream is trimmed). A starting replica loads it and replays
 * only the entries after `seq` (docs/replication.md).
 */
export interface StoredSnapshot {
  /** The snapshot's format version (as the log entries'). */
  readonly v: number;
  /** The last log sequence the snapshot reflects. */
  readonly seq: number;
  readonly swarm: PersistedSwarm;
  /** Each node's last applied entry's sequence. */
  readonly touched: readonly (readonly [string, number])[];
  /** The log's genesis; absent in snapshots stored before the log was trimmed (the stream's first entry is then the genesis). */
  readonly genesis?: Extract<LogEntry, { type: 'swarm.genesis' }>;
  /** Version 2: the agent id → key bindings the log holds. */
  readonly bindings?: readonly (readonly [string, string])[];
  /** Version 2: the log's seal and the entry ids within the replay window (log-acceptance.ts). */
  readonly acceptance?: AcceptanceState;
  /** The same, as snapshots written before the rename name it (read, never written). */
  readonly admission?: AcceptanceState;
  /** With the swarm secret (any version): its HMAC of the rest (log-signer.ts). */
  readonly sig?: string;
}

const KEY = 'snapshot';
const encoder = new TextEncoder();

/** The bucket of one swarm's snapshot: load the latest, save a later one (never an earlier). */
export class SnapshotStore {
  private saving = false;

  /**
   * Without the secret: whether a replica with it is around (log-compactor.ts), so a signed
   * snapshot in the bucket is not overwritten (a replica restarted with the secret starts from it).
   */
  private keepSigned: () => boolean = () => false;

  /** Snapshots the secret's signature did not verify, skipped by {@link SnapshotStore.load}. */
  rejected = 0;

  private constructor(
    /** The bucket (the replicas' applied sequences live in it too). */
    readonly kv: KV,
    private readonly reads: readonly number[],
    private readonly signer: LogSigner | undefined,
  ) {}

  /**
   * Opens the swarm's bucket, creating it (one value of history, file storage, `replicas` copies)
   * if missing. With `signer` (the swarm secret) it loads only snapshots signed with it and signs
   * those it saves, whatever their version.
   */
  static async open(nc: NatsConnection, swarm: string, replicas = 1, reads: readonly number[] = UNSIGNED_FORMATS, signer?: LogSigner): Promise<SnapshotStore> {
    return new SnapshotStore(await new Kvm(nc).create(`hecate_${swarm}`, { history: 1, ...(replicas !== 1 ? { replicas } : {}) }), reads, signer);
  }

  /** Without the secret, keeps a signed snapshot in the bucket while `around()` says a replica with the secret is; returns this store. */
  keepingSigned(around: () => boolean): this {
    this.keepSigned = around;
    return this;
  }

  /**
   * The stored snapshot, or undefined when there is none or it is not one (a replica then replays the log).
   * @throws {ReplicationError} `UnknownVersion` for a snapshot in a format version this release does not read
   */
  async load(): Promise<StoredSnapshot | undefined> {
    const entry = await this.kv.get(KEY);
    if (entry === null || entry.operation !== 'PUT' || entry.length === 0) return undefined;
    let value: StoredSnapshot | undefined;
    try {
      value = entry.json<StoredSnapshot>();
    } catch {
      return undefined;
    }
    if (value === null || typeof value !== 'object') return undefined;
    if (this.signer !== undefined && !this.signer.verify('snapshot', value)) {
      // Not the secret's (a forged one, or one from before the swarm had a secret): replay the log instead.
      this.rejected++;
      return undefined;
    }
    if (Number.isInteger(value.v) && !this.reads.includes(value.v)) throw unknownFormat(`the KV snapshot at log sequence ${String(value.seq)}`, value.v, this.reads);
    return this.reads.includes(value.v) && Number.isInteger(value.seq) && Array.isArray(value.touched) ? value : undefined;
  }

  /**
   * Saves `snapshot` unless a save is under way or the bucket holds one at least as recent;
   * compare-and-set on the bucket's revision, so two replicas saving at once keep the later. With
   * the secret, a held snapshot it did not sign is overwritten, and when another replica's save
   * came in between (the compare-and-set failed) it looks again: one it did not sign and not later
   * than this one (a replica without the secret saving the same boundary) is overwritten still, so
   * the bucket keeps a snapshot a replica with the secret can start from. Resolves with whether it
   * was stored.
   */
  async save(snapshot: StoredSnapshot): Promise<boolean> {
    if (this.saving) return false;
    this.saving = true;
    try {
      // Signed at any version: a version-1 one (the upgrade window) must also be one the secret's holders trust; the release before ignores `sig`.
      const data = encoder.encode(JSON.stringify(this.signer !== undefined ? this.signer.signed('snapshot', snapshot) : snapshot));
      for (let attempt = 0; ; attempt++) {
        const current = await this.kv.get(KEY);
        const held = current === null || current.operation !== 'PUT' ? undefined : this.held(current);
        if (held !== undefined && held.trusted && held.seq >= snapshot.seq) return false;
        if (held?.signed === true && this.signer === undefined && this.keepSigned()) return false; // a replica with the secret is around: it could not start from ours
        if (attempt > 0 && (held === undefined || held.seq > snapshot.seq || attempt > 3)) return false;
        try {
          if (current === null || current.operation !== 'PUT') await this.kv.create(KEY, data);
          else await this.kv.update(KEY, data, current.revision);
          return true;
        } catch (error) {
          // Another replica saved first: without the secret, the next boundary will do.
          if (this.signer === undefined) throw error;
        }
      }
    } catch {
      return false; // the connection went: the next one will do
    } finally {
      this.saving = false;
    }
  }

  /** The sequence of the snapshot the bucket holds, and whether it is one to keep (signed with the secret, when this replica has it). */
  private held(current: { json<T>(): T }): { readonly seq: number; readonly trusted: boolean; readonly signed: boolean } {
    try {
      const held = describeHeld(current.json<unknown>(), this.signer);
      // One the secret did not sign (forged, say with a far sequence to stop every later save) is overwritten.
      return { seq: held.seq, trusted: this.signer === undefined || held.verifies, signed: held.signed };
    } catch {
      return { seq: 0, trusted: false, signed: false }; // not a snapshot: overwrite it
    }
  }
}
