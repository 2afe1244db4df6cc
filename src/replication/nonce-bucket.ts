/**
 * The nonces of signed member requests taken by any orchestrator of a replicated swarm
 * (docs/security.md, "Signed requests"): a JetStream KV bucket `hecate-<swarm>-nonces`, one key per
 * nonce, each kept `keepMs` (the bucket's max age: longer than a timestamp is accepted). A nonce is
 * taken with a create, which one writer alone wins: a join, heartbeat or leave captured at one
 * orchestrator and replayed to another, or to one restarted since, is refused. Not part of the
 * subpath's API: `src/orchestrator` loads it, here because only src/replication loads NATS.
 */
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { isWrongSequence } from './checkpoint-bucket.js';
import { connectNats, type NatsAccess } from './nats-access.js';
import { ReplicationError } from './replication-error.js';

/** Options of {@link openNonceBucket}. */
export interface NonceBucketOptions {
  readonly servers: readonly string[];
  readonly swarm: string;
  /** How long a nonce is kept: at least the span of timestamps a receiver accepts. */
  readonly keepMs: number;
  /** NATS credentials and TLS, as the replica's. */
  readonly nats?: NatsAccess;
}

/** The shared nonces of one swarm. */
export interface NonceBucket {
  /**
   * Records `nonce` (16-64 hex digits); false when it was taken already.
   * @throws {ReplicationError} `Disconnected` when NATS does not answer (a 503: the member tries another orchestrator)
   */
  claim(nonce: string): Promise<boolean>;
  close(): Promise<void>;
}

/** The bucket of swarm `swarm`. */
export function nonceBucketName(swarm: string): string {
  return `hecate-${swarm}-nonces`;
}

/** Connects and opens (creating if needed) the nonce bucket of `options.swarm`. */
export async function openNonceBucket(options: NonceBucketOptions): Promise<NonceBucket> {
  const nc: NatsConnection = await connectNats(options.servers, options.nats);
  let kv: KV;
  try {
    kv = await new Kvm(nc).create(nonceBucketName(options.swarm), { history: 1, ttl: options.keepMs });
  } catch (error) {
    await nc.close();
    throw error;
  }
  return {
    async claim(nonce) {
      try {
        await kv.create(nonce, '1');
        return true;
      } catch (error) {
        if (isWrongSequence(error)) return false;
        throw new ReplicationError('Disconnected', `swarm "${options.swarm}": cannot record a member's nonce in ${nonceBucketName(options.swarm)} (${(error as Error).message})`, { cause: error });
      }
    },
    close: () => nc.close(),
  };
}
