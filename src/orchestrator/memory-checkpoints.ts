/**
 * The checkpoint store of an orchestrator on its own (no `--nats`): the same compare-and-set map
 * as the JetStream bucket, in memory, a record dropped `ttlMs` after its last write (timed by the
 * orchestrator's clock). A retry on the same orchestrator gets the stored answer or resumes; one
 * on another cannot (docs/serve.md, "Idempotent generation").
 */
import type { Clock } from '../runtime/types.js';
import type { CheckpointStore } from './generate-checkpoint.js';
import { IdempotencyError } from './idempotency-error.js';

/** The records held at most, and their characters at most, unless told otherwise. */
export const MEMORY_CHECKPOINT_BOUNDS = Object.freeze({ records: 100_000, chars: 32 * 1024 * 1024 });

interface Held {
  readonly value: string;
  readonly revision: number;
  readonly expiresAt: number;
}

/** A {@link CheckpointStore} in memory. */
export class MemoryCheckpoints implements CheckpointStore {
  /** Oldest write first (a write re-inserts its key), so expiry sweeps from the front. */
  private readonly held = new Map<string, Held>();
  private revision = 0;
  /** Characters of the keys and values held. */
  private chars = 0;

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    readonly ttlMs: number,
    private readonly bounds: { readonly records: number; readonly chars: number } = MEMORY_CHECKPOINT_BOUNDS,
  ) {}

  /**
   * @throws {IdempotencyError} `Full` (429 with Retry-After: when the oldest record expires) when
   *   the store holds its bound of records or characters
   */
  async create(key: string, value: string): Promise<number | undefined> {
    this.sweep();
    if (this.held.has(key)) return undefined;
    if (this.held.size >= this.bounds.records || this.chars + key.length + value.length > this.bounds.chars) {
      const oldest = this.held.values().next().value;
      const retryAfterMs = Math.max(1000, (oldest?.expiresAt ?? 0) - this.clock.now());
      throw new IdempotencyError('Full', `idempotency: this orchestrator holds ${this.held.size} keys (${this.chars} characters; at most ${this.bounds.records} and ${this.bounds.chars}); try again, or without a key`, { retryAfterMs });
    }
    return this.write(key, value);
  }

  async get(key: string): Promise<{ readonly value: string; readonly revision: number } | undefined> {
    this.sweep();
    const held = this.held.get(key);
    return held === undefined ? undefined : { value: held.value, revision: held.revision };
  }

  async update(key: string, value: string, revision: number): Promise<number | undefined> {
    this.sweep();
    if (this.held.get(key)?.revision !== revision) return undefined;
    return this.write(key, value);
  }

  async remove(key: string, revision: number): Promise<boolean> {
    this.sweep();
    if (this.held.get(key)?.revision !== revision) return false;
    this.drop(key);
    return true;
  }

  async close(): Promise<void> {
    this.held.clear();
    this.chars = 0;
  }

  /** Records held now (for tests and status). */
  get size(): number {
    this.sweep();
    return this.held.size;
  }

  private write(key: string, value: string): number {
    this.revision++;
    this.drop(key);
    this.held.set(key, { value, revision: this.revision, expiresAt: this.clock.now() + this.ttlMs });
    this.chars += key.length + value.length;
    return this.revision;
  }

  private drop(key: string): void {
    const held = this.held.get(key);
    if (held === undefined) return;
    this.held.delete(key);
    this.chars -= key.length + held.value.length;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [key, held] of this.held) {
      if (held.expiresAt > now) break;
      this.drop(key);
    }
  }
}
