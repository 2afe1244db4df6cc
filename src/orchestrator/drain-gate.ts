/**
 * SIGTERM drains (docs/serve.md, "Draining"): the gate every generation passes. Open, it lets
 * generations in and knows which run; draining, it refuses new ones (503 `Draining` with
 * `Retry-After`), waits for the running ones up to a grace period, then hands back the rest: their
 * sessions are aborted (the stage calls cancelled, the agents told to drop them) and their clients
 * answered 503 `Draining` with `Retry-After`, to try again on another orchestrator or later.
 */
import type { Clock } from '../runtime/types.js';
import { ServeError } from '../wire/serve-error.js';

/** What a drain did. */
export interface DrainReport {
  /** Generations running when the drain began that finished within the grace period. */
  readonly finished: number;
  /** Generations still running at its end, handed back. */
  readonly handedBack: number;
}

/** The gate of `POST /v1/generate`. */
export class DrainGate {
  private retryAfterMs: number | undefined;
  private readonly running = new Set<AbortController>();
  private idle: (() => void) | undefined;

  /** True once a drain began: nothing new is let in. */
  get draining(): boolean {
    return this.retryAfterMs !== undefined;
  }

  /** Generations let in and not yet out. */
  get size(): number {
    return this.running.size;
  }

  /**
   * A generation starts: its controller aborts (reason: the 503 `Draining` to answer) if it is handed back.
   * @throws {ServeError} 503 `Draining` with `retryAfterMs` once a drain began
   */
  enter(): AbortController {
    if (this.retryAfterMs !== undefined) throw draining(this.retryAfterMs, 'it takes no new generation');
    const controller = new AbortController();
    this.running.add(controller);
    return controller;
  }

  /** The generation of {@link enter} ended, however. */
  leave(controller: AbortController): void {
    this.running.delete(controller);
    if (this.running.size === 0) this.idle?.();
  }

  /**
   * Stops letting generations in and waits up to `graceMs` (on `clock`) for the running ones, then
   * hands back the rest and waits for them to end. Draining twice waits as the first does.
   */
  async drain(graceMs: number, clock: Clock): Promise<DrainReport> {
    this.retryAfterMs ??= Math.max(graceMs, 1000);
    const before = this.running.size;
    if (before > 0) {
      await new Promise<void>((resolve) => {
        const timer = clock.setTimeout(() => resolve(), graceMs);
        this.idle = () => {
          clock.clearTimeout(timer);
          resolve();
        };
      });
    }
    const left = [...this.running];
    for (const controller of left) controller.abort(draining(this.retryAfterMs, `it handed this generation back after its grace period of ${graceMs} ms`));
    if (this.running.size > 0) await new Promise<void>((resolve) => (this.idle = resolve));
    this.idle = undefined;
    return { finished: before - left.length, handedBack: left.length };
  }
}

function draining(retryAfterMs: number, what: string): ServeError {
  return new ServeError('Draining', 503, `the orchestrator is shutting down (SIGTERM): ${what}; try again later or on another orchestrator`, { retryAfterMs });
}
