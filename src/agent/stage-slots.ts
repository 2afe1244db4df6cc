/**
 * The agent's stage slots: stage calls it runs at once; later ones wait in arrival order (a GPU
 * serving one batch at a time), and a waiting call that is cancelled leaves the queue.
 */

/** Slots of one agent: `busy` of `slots` taken, the rest waiting in arrival order. */
export class StageSlots {
  private busy = 0;
  private readonly queue: (() => void)[] = [];

  /** @param slots calls run at once (Infinity: every call runs at once) */
  constructor(private readonly slots: number = Number.POSITIVE_INFINITY) {}

  /** Calls running now. */
  get running(): number {
    return this.busy;
  }

  /** Calls waiting for a slot. */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * Resolves once a slot is this call's; rejects, leaving the queue, if its signal aborts first.
   * The signal is read only when the call must wait (an `AbortController` makes its signal on first read).
   */
  acquire(call: { readonly signal: AbortSignal }): Promise<void> {
    if (this.busy < this.slots) {
      this.busy++;
      return Promise.resolve();
    }
    const signal = call.signal;
    return new Promise((resolve, reject) => {
      const take = (): void => {
        signal.removeEventListener('abort', leave);
        resolve();
      };
      const leave = (): void => {
        const at = this.queue.indexOf(take);
        if (at >= 0) this.queue.splice(at, 1);
        reject(signal.reason);
      };
      this.queue.push(take);
      signal.addEventListener('abort', leave, { once: true });
    });
  }

  /** Hands the slot to the next waiting call, or frees it. */
  release(): void {
    const next = this.queue.shift();
    if (next !== undefined) next();
    else this.busy--;
  }
}
