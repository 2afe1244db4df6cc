import type { Clock } from './types.js';

/** Wall-clock milliseconds. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told: for simulations and tests. */
export class ManualClock implements Clock {
  private t: number;
  constructor(start = 0) {
    this.t = start;
  }
  now(): number {
    return this.t;
  }
  /** Moves time forward by `ms` (never backwards). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance: ms must be >= 0, got ${ms}`);
    this.t += ms;
  }
  /** Sets the time, if it is not earlier than now. */
  set(ms: number): void {
    if (!(ms >= this.t)) throw new RangeError(`ManualClock.set: time cannot go back from ${this.t} to ${ms}`);
    this.t = ms;
  }
}
