/**
 * Claiming an idempotency key (docs/serve.md, "Idempotent generation"): a create in the checkpoint
 * store, so no request runs twice at once. The holder renews its lease every third of it; a key
 * whose holder stopped renewing (it died) or let go (a cancel, a failure) is taken over with a
 * compare-and-set, resuming from its checkpoint; a finished one answers with its stored result.
 * Every write names the revision it read: a holder whose write finds the key moved has lost it.
 */
import type { Clock } from '../runtime/types.js';
import { decodeInputs, encodeInputs, parseCheckpoint, type CheckpointRecord, type CheckpointStore } from './generate-checkpoint.js';
import { IdempotencyError } from './idempotency-error.js';

/** Who claims, and for how long. */
export interface ClaimOptions {
  /** This orchestrator's name in the record. */
  readonly owner: string;
  readonly clock: Clock;
  /** A claim ends this long after its last renewal. */
  readonly leaseMs: number;
  /** A renewal or checkpoint the store refused for another reason than a lost claim (it is unreachable). */
  readonly onWriteError?: (error: unknown) => void;
}

/** What claiming a key gave: the stored answer, or the right to run from `inputs`. */
export type ClaimOutcome =
  | { readonly kind: 'done'; readonly reply: unknown }
  | { readonly kind: 'run'; readonly claim: IdempotencyClaim; readonly inputs: readonly number[]; /** The record was made by this claim (no one held the key). */ readonly fresh: boolean };

/** A store call that failed: the store cannot be reached. */
async function reach<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof IdempotencyError) throw error; // the store's own refusal (Full)
    throw new IdempotencyError('Unavailable', `the checkpoint store did not answer (${what}): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** The request a key is claimed for: its fingerprint (generate-checkpoint.ts) and its first step's input. */
export interface ClaimedRequest {
  readonly fingerprint: string;
  readonly firstInput: number;
}

/**
 * Claims `key` for `request`.
 * @throws {IdempotencyError} `InProgress` (with `retryAfterMs`) while another holder's lease runs,
 *   `KeyReused` when the key belongs to another request, `Unavailable` when the store cannot be reached.
 */
export async function claimGenerate(store: CheckpointStore, key: string, request: ClaimedRequest, options: ClaimOptions): Promise<ClaimOutcome> {
  const { fingerprint, firstInput } = request;
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = options.clock.now();
    const fresh: CheckpointRecord = { v: 1, request: fingerprint, state: 'running', owner: options.owner, leaseUntil: now + options.leaseMs, done: 0, inputs: encodeInputs([firstInput]) };
    const created = await reach('create', () => store.create(key, JSON.stringify(fresh)));
    if (created !== undefined) return { kind: 'run', claim: new IdempotencyClaim(store, key, { record: fresh, revision: created }, options), inputs: [firstInput], fresh: true };
    const got = await reach('get', () => store.get(key));
    if (got === undefined) continue; // expired between the two: create again
    let held: CheckpointRecord;
    try {
      held = parseCheckpoint(got.value, key);
    } catch (error) {
      throw new IdempotencyError('KeyReused', `idempotency key "${key}": ${(error as Error).message}`, { cause: error });
    }
    if (held.request !== fingerprint) throw new IdempotencyError('KeyReused', `idempotency key "${key}" belongs to another request (another model, prompt or steps); use a new key`);
    if (held.state === 'done' && held.result !== undefined) return { kind: 'done', reply: held.result };
    if (held.state === 'running' && held.leaseUntil > now) {
      throw new IdempotencyError('InProgress', `idempotency key "${key}" is running on orchestrator "${held.owner}" (${held.done} steps checkpointed); its claim ends in ${Math.ceil(held.leaseUntil - now)} ms unless renewed`, { retryAfterMs: held.leaseUntil - now });
    }
    const taken: CheckpointRecord = { ...held, state: 'running', owner: options.owner, leaseUntil: now + options.leaseMs };
    const revision = await reach('take over', () => store.update(key, JSON.stringify(taken), got.revision));
    if (revision === undefined) throw new IdempotencyError('InProgress', `idempotency key "${key}" was just taken over by another orchestrator`, { retryAfterMs: options.leaseMs });
    return { kind: 'run', claim: new IdempotencyClaim(store, key, { record: taken, revision }, options), inputs: decodeInputs(held.inputs), fresh: false };
  }
  throw new IdempotencyError('InProgress', `idempotency key "${key}" kept changing while it was claimed`, { retryAfterMs: options.leaseMs });
}

/**
 * A held key: renews its lease, writes checkpoints, and ends as `done` (the answer kept until the
 * store's TTL) or `paused` (the checkpoint kept, the key free at once). `signal` aborts when a
 * write finds the key moved: another orchestrator took it over, this one must stop.
 */
export class IdempotencyClaim {
  private readonly lost = new AbortController();
  private chain: Promise<void> = Promise.resolve();
  private timer: unknown;
  private ended = false;
  /** When the last write landed: a checkpoint renews the lease too. */
  private wroteAt: number;
  private record: CheckpointRecord;
  private revision: number;

  /** @internal made by {@link claimGenerate}: `held` is the record it wrote and that write's revision. */
  constructor(
    private readonly store: CheckpointStore,
    readonly key: string,
    held: { readonly record: CheckpointRecord; readonly revision: number },
    private readonly options: ClaimOptions,
  ) {
    this.record = held.record;
    this.revision = held.revision;
    this.wroteAt = options.clock.now();
    this.arm(options.leaseMs / 3);
  }

  /** Aborted when the key was taken over under this holder. */
  get signal(): AbortSignal {
    return this.lost.signal;
  }

  /** Steps checkpointed so far. */
  get done(): number {
    return this.record.done;
  }

  /** Records `inputs` (the step inputs at layer 0, `done + 1` of them) as the checkpoint; resolves once stored. */
  checkpoint(done: number, inputs: readonly number[]): Promise<void> {
    const encoded = encodeInputs(inputs.slice(0, done + 1));
    return this.write((r) => ({ ...r, done, inputs: encoded, leaseUntil: this.options.clock.now() + this.options.leaseMs }));
  }

  /** The generation finished after `steps` steps: its answer (as JSON) is kept until the store's TTL, for any retry. */
  finish(reply: unknown, steps: number): Promise<void> {
    this.end();
    return this.write((r) => ({ ...r, state: 'done', done: steps, inputs: '', leaseUntil: 0, result: reply }), true);
  }

  /**
   * Lets the key go (a cancel, a failure), checkpointing the `done` steps run (`inputs`: their
   * step inputs, `done + 1`): the checkpoint stays until the TTL, a retry resumes from it at once.
   */
  pause(done: number, inputs: readonly number[]): Promise<void> {
    this.end();
    const encoded = encodeInputs(inputs.slice(0, done + 1));
    return this.write((r) => ({ ...r, state: 'paused', leaseUntil: 0, ...(done > r.done ? { done, inputs: encoded } : {}) }), true);
  }

  /**
   * Lets the key go leaving no record: a request refused before it ran a step (not admitted, no
   * route) made a record it has no use for, and a refused request must not hold memory for the TTL.
   */
  release(): Promise<void> {
    this.end();
    const run = async () => {
      if (this.lost.signal.aborted) return;
      try {
        await this.store.remove(this.key, this.revision);
      } catch (error) {
        this.options.onWriteError?.(error);
      }
    };
    this.chain = this.chain.then(run);
    return this.chain;
  }

  private end(): void {
    this.ended = true;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Renews a third of the lease after the last write (a checkpoint is one), until the claim ends. */
  private arm(ms: number): void {
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.ended || this.lost.signal.aborted) return;
      const every = this.options.leaseMs / 3;
      const since = this.options.clock.now() - this.wroteAt;
      if (since < every) {
        this.arm(every - since);
        return;
      }
      void this.write((r) => ({ ...r, leaseUntil: this.options.clock.now() + this.options.leaseMs })).finally(() => {
        if (!this.ended) this.arm(every);
      });
    }, ms);
  }

  /**
   * Writes `change` of the record as the last write left it, in order, each naming the revision
   * the last one left; `final` writes go even after the claim ended.
   */
  private write(change: (record: CheckpointRecord) => CheckpointRecord, final = false): Promise<void> {
    const run = async () => {
      if (this.lost.signal.aborted || (this.ended && !final)) return;
      const next = change(this.record);
      try {
        const revision = await this.store.update(this.key, JSON.stringify(next), this.revision);
        if (revision === undefined) {
          this.end();
          this.lost.abort(new IdempotencyError('ClaimLost', `idempotency key "${this.key}" was taken over by another orchestrator (this one's lease ran out before it renewed)`));
          return;
        }
        this.revision = revision;
        this.record = next;
        this.wroteAt = this.options.clock.now();
      } catch (error) {
        this.options.onWriteError?.(error);
      }
    };
    this.chain = this.chain.then(run);
    return this.chain;
  }
}
