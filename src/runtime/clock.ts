import { describeValue } from '../core/describe.js';
import { SwarmError } from '../core/errors.js';
import type { Clock, TimeSource } from './types.js';

/** Wall-clock milliseconds and the host's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

interface Timer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

/** Earlier due time first; among equal times, the one scheduled first. */
function before(a: Timer, b: Timer): boolean {
  return a.due < b.due || (a.due === b.due && a.id < b.id);
}

/**
 * A clock that moves only when told, with timers on the same time line: for simulations and tests.
 * It is XState's clock (`createSwarm(..., { clock })` hands it to the actors), so delayed
 * transitions fire exactly when {@link ManualClock.advance} passes their time, in order.
 * @example
 * const clock = new ManualClock();
 * const swarm = createSwarm(profiles, config, { clock });
 * swarm.heartbeat('gpu'); clock.advance(10_000); // the detector has taken the silent gpu down
 */
export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  /** A binary min-heap of timers by (due, id); cancelled ones are dropped when they reach the top. */
  private readonly heap: Timer[] = [];
  private readonly live = new Set<number>();

  /** @throws {SwarmError} `InvalidInput` for a start that is not a finite number */
  constructor(start = 0) {
    if (!Number.isFinite(start)) throw new SwarmError('InvalidInput', `ManualClock: start must be a finite number, got ${describeValue(start)}`);
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  /** Runs `fn` once the clock reaches now + `ms` (a negative, NaN or non-number delay counts as 0). Returns a handle for {@link clearTimeout}. */
  setTimeout(fn: (...args: unknown[]) => void, ms: number): number {
    if (typeof fn !== 'function') throw new SwarmError('InvalidInput', `ManualClock.setTimeout: the callback must be a function, got ${describeValue(fn)}`);
    const id = ++this.seq;
    const due = this.t + (typeof ms === 'number' && ms > 0 ? ms : 0);
    this.push({ id, due, fn: () => fn() });
    this.live.add(id);
    return id;
  }

  /** Cancels a timer that has not fired yet; anything else is ignored. */
  clearTimeout(handle: unknown): void {
    if (typeof handle === 'number') this.live.delete(handle);
  }

  /** Timers scheduled and not yet fired or cancelled. */
  pending(): number {
    return this.live.size;
  }

  /** When the next live timer is due, or undefined when none is. */
  nextDue(): number | undefined {
    this.dropCancelled();
    return this.heap[0]?.due;
  }

  /**
   * Moves time forward by `ms`, firing every timer due on the way in order, each at its own time
   * (`now()` reads the timer's due time while it runs) — including timers that fired timers
   * schedule inside the window.
   * @throws {SwarmError} `InvalidInput` for a negative or non-finite `ms`
   */
  advance(ms: number): void {
    if (!(typeof ms === 'number' && ms >= 0 && Number.isFinite(ms))) throw new SwarmError('InvalidInput', `ManualClock.advance: ms must be a finite number >= 0, got ${describeValue(ms)}`);
    this.runUntil(this.t + ms);
  }

  /**
   * Sets the time, firing the timers due up to it as {@link advance} does.
   * @throws {SwarmError} `InvalidInput` for a time earlier than now or not a finite number
   */
  set(ms: number): void {
    if (!(typeof ms === 'number' && ms >= this.t && Number.isFinite(ms))) throw new SwarmError('InvalidInput', `ManualClock.set: time cannot go back from ${this.t} to ${describeValue(ms)}`);
    this.runUntil(ms);
  }

  private runUntil(end: number): void {
    for (;;) {
      this.dropCancelled();
      const next = this.heap[0];
      if (next === undefined || next.due > end) break;
      this.pop();
      this.live.delete(next.id);
      this.t = next.due;
      next.fn();
    }
    this.t = end;
  }

  private dropCancelled(): void {
    while (this.heap.length > 0 && !this.live.has((this.heap[0] as Timer).id)) this.pop();
  }

  private push(timer: Timer): void {
    const h = this.heap;
    h.push(timer);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i] as Timer, h[parent] as Timer)) break;
      [h[i], h[parent]] = [h[parent] as Timer, h[i] as Timer];
      i = parent;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop() as Timer;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && before(h[l] as Timer, h[m] as Timer)) m = l;
      if (r < h.length && before(h[r] as Timer, h[m] as Timer)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m] as Timer, h[i] as Timer];
      i = m;
    }
  }
}

/** Whether a clock also keeps timers, so it can be the actors' clock. */
export function isTimerClock(clock: Clock | TimeSource | undefined): clock is Clock {
  return clock !== undefined && typeof (clock as Partial<Clock>).setTimeout === 'function' && typeof (clock as Partial<Clock>).clearTimeout === 'function';
}
