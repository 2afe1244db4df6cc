/**
 * The wait before a session resumes (docs/sessions.md, "What a failure is"): `wait` ms on the
 * session's clock, cut short by an abort of any of `signals` or by the deadline `left` ms away.
 */
import type { TimerClock } from './session-types.js';

/** How a backoff ended. */
export type BackoffEnd = 'ok' | 'aborted' | 'deadline';

/**
 * Waits `wait` ms (or until the deadline, `left` ms away, if sooner); `onInterrupt` receives the
 * function that ends the wait as aborted (the session's close calls it), and undefined once over.
 */
export function backoffWait(clock: TimerClock, wait: number, left: number, signals: readonly AbortSignal[], onInterrupt: (interrupt: (() => void) | undefined) => void): Promise<BackoffEnd> {
  return new Promise((resolve) => {
    const done = (how: BackoffEnd) => {
      clock.clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener('abort', onAbort);
      onInterrupt(undefined);
      resolve(how);
    };
    const onAbort = () => done('aborted');
    onInterrupt(onAbort);
    const timer = wait < left ? clock.setTimeout(() => done('ok'), wait) : clock.setTimeout(() => done('deadline'), left);
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
  });
}
