/**
 * Where the orchestrators of a replicated swarm keep idempotent generations' checkpoints
 * (docs/replication.md, "Generate checkpoints"): a JetStream KV bucket `hecate-<swarm>-generate`,
 * one key per idempotency key, every record kept `ttlMs` after its last write (the bucket's max
 * age) and at most {@link CHECKPOINT_MAX_VALUE} bytes. Compare-and-set by revision: a key is
 * claimed with a create, and every later write names the revision it read. Not part of the
 * subpath's API: `src/orchestrator` loads it, here because only src/replication loads NATS.
 *
 * With the swarm secret, every record is stored as `{ key, value, sig }` signed like the log
 * (docs/security.md, "NATS"), its key inside so a record cannot be moved to another key: a record
 * a plain client of the NATS server wrote is read as absent and overwritten by the next claim, so
 * a forged checkpoint never feeds a resumed generation.
 */
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats, type NatsAccess } from './nats-access.js';
import { LogSigner } from './log-signer.js';

/** A record's largest size: 4,097 step inputs of 8 hex digits and the answer fit with room. */
export const CHECKPOINT_MAX_VALUE = 64 * 1024;

/** Options of {@link openCheckpointBucket}. */
export interface CheckpointBucketOptions {
  readonly servers: readonly string[];
  readonly swarm: string;
  /** How long a record is kept after its last write. */
  readonly ttlMs: number;
  /** NATS credentials and TLS, as the replica's. */
  readonly nats?: NatsAccess;
  /** The swarm secret: records are signed with it and only signed ones are read. */
  readonly secret?: Uint8Array;
}

/** The store as `src/orchestrator` uses it (the shape of its `CheckpointStore`). */
export interface CheckpointBucket {
  create(key: string, value: string): Promise<number | undefined>;
  get(key: string): Promise<{ readonly value: string; readonly revision: number } | undefined>;
  update(key: string, value: string, revision: number): Promise<number | undefined>;
  /** Deletes `key` if it is still at `revision`; false when it moved. */
  remove(key: string, revision: number): Promise<boolean>;
  readonly ttlMs: number;
  close(): Promise<void>;
}

/** The bucket of swarm `swarm`. */
export function checkpointBucketName(swarm: string): string {
  return `hecate-${swarm}-generate`;
}

/** JetStream's "wrong last sequence": the key exists (a create) or moved on (an update). */
export function isWrongSequence(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 10071 || code === 10164;
}

/** Connects and opens (creating if needed) the checkpoint bucket of `options.swarm`. */
export async function openCheckpointBucket(options: CheckpointBucketOptions): Promise<CheckpointBucket> {
  const nc: NatsConnection = await connectNats(options.servers, options.nats);
  let kv: KV;
  try {
    kv = await new Kvm(nc).create(checkpointBucketName(options.swarm), { history: 1, ttl: options.ttlMs, maxValueSize: CHECKPOINT_MAX_VALUE });
  } catch (error) {
    await nc.close();
    throw error;
  }
  const key = (k: string) => Buffer.from(k, 'utf8').toString('base64url');
  const signer = options.secret === undefined ? undefined : new LogSigner(options.secret, options.swarm);
  const seal = (k: string, value: string): string => (signer === undefined ? value : JSON.stringify(signer.signed('checkpoint', { key: k, value })));
  /** The record's value, or undefined for one not signed with the secret for this key. */
  const open = (k: string, stored: string): string | undefined => {
    if (signer === undefined) return stored;
    let record: unknown;
    try {
      record = JSON.parse(stored);
    } catch {
      return undefined;
    }
    if (!signer.verify('checkpoint', record)) return undefined;
    const { key: at, value } = record as { key?: unknown; value?: unknown };
    return at === k && typeof value === 'string' ? value : undefined;
  };
  return {
    ttlMs: options.ttlMs,
    async create(k, value) {
      try {
        return await kv.create(key(k), seal(k, value));
      } catch (error) {
        if (!isWrongSequence(error)) throw error;
      }
      // The key exists: a record no orchestrator signed is taken as absent and replaced.
      const e = await kv.get(key(k));
      if (e === null || e.operation !== 'PUT' || open(k, e.string()) !== undefined) return undefined;
      try {
        return await kv.update(key(k), seal(k, value), e.revision);
      } catch (error) {
        if (isWrongSequence(error)) return undefined;
        throw error;
      }
    },
    async get(k) {
      const e = await kv.get(key(k));
      if (e === null || e.operation !== 'PUT') return undefined;
      const value = open(k, e.string());
      return value === undefined ? undefined : { value, revision: e.revision };
    },
    async update(k, value, revision) {
      try {
        return await kv.update(key(k), seal(k, value), revision);
      } catch (error) {
        if (isWrongSequence(error)) return undefined;
        throw error;
      }
    },
    async remove(k, revision) {
      try {
        await kv.delete(key(k), { previousSeq: revision });
        return true;
      } catch (error) {
        if (isWrongSequence(error)) return false;
        throw error;
      }
    },
    async close() {
      await nc.close();
    },
  };
}
