/**
 * How an admitted session (one with a `priority`) waits for a slot (docs/admission.md,
 * "Sessions"): its first step through `swarm.admit` in its band, a resumed step on its resumed
 * route at the head of its band; both under the session's deadline and signals, and cut short
 * when the session is closed.
 */
import { RoutingError, SessionError } from '../core/errors.js';
import type { Route } from '../core/types.js';
import type { LeasedRoute, SwarmRequest } from '../runtime/types.js';
import type { SessionHost, TimerClock } from './session-types.js';

/** What an admission wait needs of its session. */
export interface AdmissionWait {
  readonly host: SessionHost;
  readonly request: SwarmRequest;
  readonly priority: number;
  readonly deadlineAt: number;
  readonly clock: TimerClock;
  readonly signals: readonly AbortSignal[];
  /** Lets `close` cut the wait short (the session's `interrupt`). */
  readonly onInterrupt: (interrupt: (() => void) | undefined) => void;
}

/** How a wait ended without a lease: the session fails with this code (the error is the cause). */
export type AdmissionFailure = { readonly code: 'DeadlineExceeded' | 'Aborted'; readonly error: RoutingError };

/** An admitted session's first route and id, with no lease yet. @throws {SessionError} `InvalidInput` for a host without admission */
export function admittedStart(host: SessionHost, request: SwarmRequest): { readonly route: Route; readonly id: string } {
  if (host.admit === undefined || host.choose === undefined) throw new SessionError('InvalidInput', 'session option "priority" needs a host with admit() and choose() (a swarm\'s host has them)');
  return host.choose(request);
}

/**
 * Waits for a lease: on the router's choice (`route` undefined) or on `route` alone, at the head
 * of the band when `resumed`. Resolves with the lease, or with why it ended without one; any
 * other refusal (`Saturated`, a routing error) rejects as is.
 */
export async function waitForAdmission(w: AdmissionWait, route: Route | undefined, resumed: boolean): Promise<LeasedRoute | AdmissionFailure> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  for (const s of w.signals) {
    if (s.aborted) abort();
    else s.addEventListener('abort', abort, { once: true });
  }
  w.onInterrupt(abort);
  const left = w.deadlineAt - w.clock.now();
  try {
    return await w.host.admit?.(w.request, { priority: w.priority, resumed, signal: controller.signal, ...(left === Infinity ? {} : { deadlineMs: Math.max(0, left) }) }, route) as LeasedRoute;
  } catch (error) {
    if (error instanceof RoutingError && (error.code === 'DeadlineExceeded' || error.code === 'Aborted')) return { code: error.code, error };
    throw error;
  } finally {
    w.onInterrupt(undefined);
    for (const s of w.signals) s.removeEventListener('abort', abort);
  }
}
