/** The flags of `hecate-node serve` for idempotent generations (docs/serve.md, "Idempotent generation"). */
import { DEFAULT_CHECKPOINT_EVERY, DEFAULT_CHECKPOINT_TTL_MS, DEFAULT_CLAIM_LEASE_MS } from '../orchestrator/idempotent-generate.js';
import type { IdempotencyOptions } from '../orchestrator/open-idempotency.js';
import { integerFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.js';

/** The flags. */
export const IDEMPOTENCY_FLAGS: Readonly<Record<string, FlagSpec>> = {
  'checkpoint-every': { type: 'string', value: 'n', description: `A generation with an idempotency key writes a checkpoint after every n steps; a retry elsewhere recomputes at most n (default ${DEFAULT_CHECKPOINT_EVERY}).` },
  'claim-lease-ms': { type: 'string', value: 'ms', description: `An idempotency key's claim ends this long after its orchestrator last renewed it, so another takes over a dead one's key (default ${DEFAULT_CLAIM_LEASE_MS}).` },
  'checkpoint-ttl-ms': { type: 'string', value: 'ms', description: `A key's checkpoint or answer is kept this long after its last write (default ${DEFAULT_CHECKPOINT_TTL_MS}).` },
};

/** The idempotency options the flags give. */
export function idempotencyFlags(args: ParsedArgs): IdempotencyOptions {
  const checkpointEvery = integerFlag(args, 'checkpoint-every', 1, 4096);
  const claimLeaseMs = integerFlag(args, 'claim-lease-ms', 30, 3_600_000);
  const checkpointTtlMs = integerFlag(args, 'checkpoint-ttl-ms', 60, 7 * 24 * 3_600_000);
  const lease = claimLeaseMs ?? DEFAULT_CLAIM_LEASE_MS;
  if (checkpointTtlMs !== undefined && checkpointTtlMs < 2 * lease) throw new UsageError(`flag --checkpoint-ttl-ms: must be at least twice the claim lease (${2 * lease} ms), got ${checkpointTtlMs}`);
  return {
    ...(checkpointEvery !== undefined ? { checkpointEvery } : {}),
    ...(claimLeaseMs !== undefined ? { claimLeaseMs } : {}),
    ...(checkpointTtlMs !== undefined ? { checkpointTtlMs } : {}),
  };
}
