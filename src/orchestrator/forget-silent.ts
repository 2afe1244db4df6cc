/**
 * Forgets an agent that joined and never heartbeated (docs/security.md): past a grace period it
 * is removed from the swarm (`removeNode`, or down when the plan cannot do without it), from the
 * waiting room before the plan, and from the address book, as if it had never joined. A fake join costs its sender the join alone; a real
 * agent that was slow to start heartbeats into a 404 and joins again.
 */
import { PlanError } from '../core/errors.js';
import type { OrchestratorParts } from './orchestrator-parts.js';

/** The default grace: 30 s, thirty heartbeats of an agent's 1 s. */
export const DEFAULT_FORGET_AFTER_MS = 30_000;

/** Joined agents still owing their first heartbeat, and the sweep that forgets them. */
export class SilentJoins {
  /** By id: when it joined, and its heartbeat count then. */
  private readonly owing = new Map<string, { at: number; heartbeats: number }>();
  private timer: unknown;
  private closed = false;
  private sweeping = false;

  constructor(
    private readonly parts: OrchestratorParts,
    private readonly graceMs: number,
  ) {}

  /** `id` joined now: forgotten unless it heartbeats within the grace. */
  joined(id: string): void {
    const record = this.parts.registry.get(id);
    if (record === undefined || this.closed) return;
    this.owing.delete(id);
    this.owing.set(id, { at: this.parts.clock.now(), heartbeats: record.heartbeats });
    this.schedule();
  }

  /** Agents waiting for their first heartbeat. */
  get size(): number {
    return this.owing.size;
  }

  /** Stops the sweep. */
  close(): void {
    this.closed = true;
    if (this.timer !== undefined) this.parts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.closed || this.owing.size === 0) return;
    const first = this.owing.values().next().value as { at: number };
    const handle = this.parts.clock.setTimeout(() => {
      this.timer = undefined;
      void this.sweep();
    }, Math.max(0, first.at + this.graceMs - this.parts.clock.now()) + 1);
    (handle as { unref?: () => void } | null)?.unref?.();
    this.timer = handle;
  }

  private async sweep(): Promise<void> {
    if (this.sweeping || this.closed) return;
    this.sweeping = true;
    try {
      const { registry, room, seat, clock, events, metrics, log } = this.parts;
      const now = clock.now();
      for (const [id, owed] of [...this.owing]) {
        if (now - owed.at < this.graceMs) break; // in join order: the rest are younger
        this.owing.delete(id);
        const record = registry.get(id);
        if (record === undefined || record.left || record.heartbeats > owed.heartbeats) continue;
        const swarm = seat.swarm;
        let how = 'forgotten';
        if (swarm !== undefined && swarm.node(id) !== undefined) {
          try {
            await swarm.removeNode(id);
          } catch (error) {
            if (!(error instanceof PlanError)) throw error;
            await swarm.markDown(id); // the plan cannot do without it: down, and still forgotten here
            how = 'forgotten, kept down in the plan';
          }
        }
        room.leave(id);
        await seat.replica?.directory.remove(id);
        registry.forget(id);
        metrics.forgotten.inc();
        events.publish('node.forgotten', { at: now, nodeId: id, how, graceMs: this.graceMs });
        log(`agent "${id}" joined and never heartbeated within ${this.graceMs} ms: ${how}`);
      }
    } catch (error) {
      this.parts.log(`forgetting silent agents: ${String(error)}`);
    } finally {
      this.sweeping = false;
      this.schedule();
    }
  }
}
