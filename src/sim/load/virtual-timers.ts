/**
 * A virtual clock with timers for simulations that run asynchronous code (sessions): time moves
 * only from one timer to the next, and between two timers every pending promise settles first.
 */
import { EventQueue } from './event-queue.js';

interface Timer {
  readonly callback: () => void;
  cancelled: boolean;
}

/** `now`, `setTimeout` and `clearTimeout` in virtual time, plus the loop that runs them. */
export class VirtualTimers {
  private t = 0;
  private readonly queue = new EventQueue<Timer>();

  now(): number {
    return this.t;
  }

  /** Timers set and not yet fired (cancelled ones included until their time comes). */
  get pending(): number {
    return this.queue.size;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const timer: Timer = { callback, cancelled: false };
    this.queue.push(this.t + Math.max(ms, 0), timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (handle !== null && typeof handle === 'object' && 'cancelled' in handle) (handle as Timer).cancelled = true;
  }

  /**
   * Fires timers in time order (ties in the order they were set), letting every promise settle
   * after each, until none is left or `until` time is passed. Same inputs, same order: the
   * promise jobs of one instant run to completion before the next timer fires.
   */
  async run(until = Infinity): Promise<void> {
    await settle();
    while (this.queue.size > 0 && this.queue.peekTime() <= until) {
      const time = this.queue.peekTime();
      const timer = this.queue.pop() as Timer;
      if (timer.cancelled) continue;
      this.t = time;
      timer.callback();
      await settle();
    }
  }
}

/** Resolves once every promise job queued so far (and the jobs they queue) has run. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
