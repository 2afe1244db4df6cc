/**
 * Where the orchestrators of a replicated swarm keep idempotent generations' checkpoints
 * (docs/replication.md, "Generate checkpoints"): a JetStream KV bucket `hecate-<swarm>-generate`,
 * one key per idempotency key, every record kept `ttlMs` after its last write (the bucket's max
 * age) and at most {@link CHECKPOINT_MAX_VALUE} bytes. Compare-and-set by revision: a key is
 * claimed with a create, and every later write names the revision it read. Not part of the
 * subpath's API: `src/serve` loads it, here because only src/replication loads NATS.
 */
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

/** A record's largest size: 4,097 step inputs of 8 hex digits and the answer fit with room. */
export const CHECKPOINT_MAX_VALUE = 64 * 1024;

/** Options of {@link openCheckpointBucket}. */
export interface CheckpointBucketOptions {
  readonly servers: readonly string[];
  readonly swarm: string;
  /** How long a record is kept after its last write. */
  readonly ttlMs: number;
}

/** The store as `src/serve` uses it (the shape of its `CheckpointStore`). */
export interface CheckpointBucket {
  create(key: string, value: string): Promise<number | undefined>;
  get(key: string): Promise<{ readonly value: string; readonly revision: number } | undefined>;
  update(key: string, value: string, revision: number): Promise<number | undefined>;
  readonly ttlMs: number;
  close(): Promise<void>;
}

/** The bucket of swarm `swarm`. */
export function checkpointBucketName(swarm: string): string {
  return `hecate-${swarm}-generate`;
}

/** JetStream's "wrong last sequence": the key exists (a create) or moved on (an update). */
function isWrongSequence(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 10071 || code === 10164;
}

/** Connects and opens (creating if needed) the checkpoint bucket of `options.swarm`. */
export async function openCheckpointBucket(options: CheckpointBucketOptions): Promise<CheckpointBucket> {
  const { connect } = await import('@nats-io/transport-node');
  const nc: NatsConnection = await connect({ servers: [...options.servers], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  let kv: KV;
  try {
    kv = await new Kvm(nc).create(checkpointBucketName(options.swarm), { history: 1, ttl: options.ttlMs, maxValueSize: CHECKPOINT_MAX_VALUE });
  } catch (error) {
    await nc.close();
    throw error;
  }
  const key = (k: string) => Buffer.from(k, 'utf8').toString('base64url');
  return {
    ttlMs: options.ttlMs,
    async create(k, value) {
      try {
        return await kv.create(key(k), value);
      } catch (error) {
        if (isWrongSequence(error)) return undefined;
        throw error;
      }
    },
    async get(k) {
      const e = await kv.get(key(k));
      if (e === null || e.operation !== 'PUT') return undefined;
      return { value: e.string(), revision: e.revision };
    },
    async update(k, value, revision) {
      try {
        return await kv.update(key(k), value, revision);
      } catch (error) {
        if (isWrongSequence(error)) return undefined;
        throw error;
      }
    },
    async close() {
      await nc.close();
    },
  };
}
