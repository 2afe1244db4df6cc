/**
 * An idempotent generation — `POST /v1/generate`, `POST /v1/completions` — (docs/serve.md,
 * "Idempotent generation"): the key is claimed
 * in the checkpoint store; a finished key answers with its stored result; otherwise the
 * generation runs from the key's checkpoint, writing one every `checkpointEvery` steps (awaited,
 * so a takeover recomputes at most that many), and ends with its answer stored, or — cancelled by
 * the client, failed, or the orchestrator shutting down — with its progress checkpointed and the
 * key let go.
 */
import type { ServerResponse } from 'node:http';
import type { Clock } from '../runtime/types.js';
import type { CheckpointStore } from './generate-checkpoint.js';
import type { GenerateProgress, GenerationTask } from './generation-task.js';
import { claimGenerate } from './idempotency-claim.js';

export type { GenerateProgress } from './generation-task.js';

/** @defaultValue of `checkpointEvery` */
export const DEFAULT_CHECKPOINT_EVERY = 8;
/** @defaultValue of `claimLeaseMs` */
export const DEFAULT_CLAIM_LEASE_MS = 3000;
/** @defaultValue of `checkpointTtlMs` */
export const DEFAULT_CHECKPOINT_TTL_MS = 600_000;

/** How idempotent generations are kept. */
export interface IdempotencySettings {
  readonly store: CheckpointStore;
  /** This orchestrator's name in the records. */
  readonly owner: string;
  /** A claim ends this long after its holder's last renewal (renewed every third of it). */
  readonly leaseMs: number;
  /** A checkpoint after every this many steps. */
  readonly checkpointEvery: number;
  readonly log?: (line: string) => void;
}

/** One request under an idempotency key. */
export interface IdempotentRequest<R> {
  readonly key: string;
  /** Its generation's task: what identifies it, its first input, its steps at most, how its answer is kept. */
  readonly task: Pick<GenerationTask<unknown, R>, 'fingerprint' | 'first' | 'steps' | 'stored'>;
  readonly settings: IdempotencySettings;
  readonly clock: Clock;
  /** Aborts when the client goes away (the progress's signal follows it). */
  readonly cancel: AbortSignal;
}

/**
 * Runs `run` under idempotency key `key`: the stored answer of a finished key, else `run` from
 * the key's checkpoint.
 * @throws {IdempotencyError} `InProgress`, `KeyReused`, `Unavailable` (claiming), `ClaimLost` (taken over while running); whatever `run` throws.
 */
export async function generateIdempotent<R>(idempotent: IdempotentRequest<R>, run: (progress: GenerateProgress) => Promise<R>): Promise<R> {
  const { key, task, settings, clock, cancel } = idempotent;
  const outcome = await claimGenerate(settings.store, key, { fingerprint: task.fingerprint, firstInput: task.first }, {
    owner: settings.owner,
    clock,
    leaseMs: settings.leaseMs,
    onWriteError: (error) => settings.log?.(`idempotency key "${key}": a checkpoint write failed (${String(error)}); going on, a takeover would recompute more`),
  });
  if (outcome.kind === 'done') return task.stored.decode(outcome.reply);
  const { claim } = outcome;
  const held = [...outcome.inputs];
  const every = settings.checkpointEvery;
  const progress: GenerateProgress = {
    inputs: outcome.inputs,
    signal: AbortSignal.any([cancel, claim.signal]),
    async afterStep(done, value) {
      held.push(value);
      if (done < task.steps && done % every === 0) await claim.checkpoint(done, held);
    },
  };
  try {
    const reply = await run(progress);
    await claim.finish(task.stored.encode(reply), task.stored.steps(reply));
    return reply;
  } catch (error) {
    if (claim.signal.aborted) throw claim.signal.reason;
    // Refused before a step (admission's 429, no route): a record this request made goes with it.
    if (outcome.fresh && held.length === 1) {
      await claim.release();
      throw error;
    }
    await claim.pause(Math.min(held.length - 1, task.steps - 1), held); // a finished step count is an answer, not a checkpoint
    throw error;
  }
}

/** Aborted when the client goes away before its answer is sent (the connection closed first). */
export function cancelOnDisconnect(response: ServerResponse): AbortSignal {
  const cancel = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) cancel.abort(new Error('the client closed the connection before the answer'));
  });
  return cancel.signal;
}
