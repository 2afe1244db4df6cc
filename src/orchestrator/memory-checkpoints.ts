/**
 * The checkpoint store of an orchestrator on its own (no `--nats`): the same compare-and-set map
 * as the JetStream bucket, in memory, a record dropped `ttlMs` after its last write (timed by the
 * orchestrator's clock). A retry on the same orchestrator gets the stored answer or resumes; one
 * on another cannot (docs/serve.md, "Idempotent generation").
 */
import type { Clock } from '../runtime/types.js';
import type { CheckpointStore } from './generate-checkpoint.js';

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

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    readonly ttlMs: number,
  ) {}

  async create(key: string, value: string): Promise<number | undefined> {
    this.sweep();
    if (this.held.has(key)) return undefined;
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

  async close(): Promise<void> {
    this.held.clear();
  }

  /** Records held now (for tests and status). */
  get size(): number {
    this.sweep();
    return this.held.size;
  }

  private write(key: string, value: string): number {
    this.revision++;
    this.held.delete(key);
    this.held.set(key, { value, revision: this.revision, expiresAt: this.clock.now() + this.ttlMs });
    return this.revision;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [key, held] of this.held) {
      if (held.expiresAt > now) break;
      this.held.delete(key);
    }
  }
}
