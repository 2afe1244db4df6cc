/**
 * Where an orchestrator keeps its idempotent generations (docs/serve.md, "Idempotent
 * generation"): one of several on a replicated swarm (`--nats`) in the swarm's JetStream KV
 * bucket `hecate-<swarm>-generate`, so a retry on another orchestrator resumes; one on its own in
 * memory, so a retry on it does.
 */
import { randomBytes } from 'node:crypto';
import type { NatsAccess } from '../replication/nats-access.js';
import { MemoryCheckpoints } from './memory-checkpoints.js';
import { DEFAULT_CHECKPOINT_EVERY, DEFAULT_CHECKPOINT_TTL_MS, DEFAULT_CLAIM_LEASE_MS, type IdempotencySettings } from './idempotent-generate.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import { ServeError } from '../wire/serve-error.js';

/** The idempotency options of the orchestrator. */
export interface IdempotencyOptions {
  /** An idempotent generation writes a checkpoint after every this many steps (1–4096). @defaultValue 8 */
  readonly checkpointEvery?: number;
  /** A claim on a key ends this long after its holder's last renewal (renewed every third of it), so a dead holder's key is taken over after it. @defaultValue 3000 */
  readonly claimLeaseMs?: number;
  /** A key's checkpoint, or its answer, is kept this long after its last write. @defaultValue 600000 */
  readonly checkpointTtlMs?: number;
}

function checkInteger(value: number | undefined, field: string, min: number, max: number): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= min && value <= max)) throw new ServeError('InvalidRequest', 400, `option "${field}" must be an integer from ${min} to ${max}, got ${String(value)}`, { field });
}

/**
 * Checks the options (before anything starts).
 * @throws {ServeError} `InvalidRequest` naming the option out of range.
 */
export function checkIdempotencyOptions(options: IdempotencyOptions): void {
  checkInteger(options.checkpointEvery, 'checkpointEvery', 1, 4096);
  checkInteger(options.claimLeaseMs, 'claimLeaseMs', 30, 3_600_000);
  checkInteger(options.checkpointTtlMs, 'checkpointTtlMs', 2 * (options.claimLeaseMs ?? DEFAULT_CLAIM_LEASE_MS), 7 * 24 * 3_600_000);
}

/**
 * The settings of the orchestrator's idempotent generations, its store opened.
 * @throws {ServeError} `InvalidRequest` naming the option out of range; the NATS error when the bucket cannot be opened.
 */
export async function openIdempotency(parts: OrchestratorParts, options: IdempotencyOptions, replication: { readonly servers: readonly string[]; readonly swarm: string; readonly nats?: NatsAccess; readonly secret?: Uint8Array } | undefined): Promise<IdempotencySettings> {
  checkIdempotencyOptions(options);
  const leaseMs = options.claimLeaseMs ?? DEFAULT_CLAIM_LEASE_MS;
  const ttlMs = options.checkpointTtlMs ?? Math.max(DEFAULT_CHECKPOINT_TTL_MS, 2 * leaseMs);
  const replica = parts.seat.replica;
  let store;
  if (replication !== undefined && replica !== undefined) {
    const { openCheckpointBucket } = await import('../replication/checkpoint-bucket.js');
    store = await openCheckpointBucket({ servers: replication.servers, swarm: replication.swarm, ttlMs, ...(replication.nats !== undefined ? { nats: replication.nats } : {}), ...(replication.secret !== undefined ? { secret: replication.secret } : {}) });
  } else {
    store = new MemoryCheckpoints(parts.clock, ttlMs);
  }
  return {
    store,
    owner: `${replica?.view().replica ?? 'orchestrator'}-${randomBytes(3).toString('hex')}`,
    leaseMs,
    checkpointEvery: options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY,
    log: parts.log,
  };
}
