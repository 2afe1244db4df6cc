/**
 * When admission's prompts enter the prefix-cache index (docs/prefix-cache.md, "Admission"):
 * `swarm.admit` asks the router for a waiting request's route before it knows a copy has room,
 * and asks again at every wake. Recording the prompt then would have the index believe a copy
 * holds prompts it never ran (a request queued, shed or aborted), once per wake. So a route chosen
 * for admission is left unrecorded, and its prompt is recorded, under the lease, only when that
 * very route is leased; the lease's `release(…, { cachedTokens })` then corrects it.
 */
import type { Route } from '../core/types.js';
import type { PrefixHook } from './prefix-hook.js';
import type { LeasedRoute } from './types.js';

/** Defers an admission route's prompt to its lease. */
export class PromptAtLease {
  private admitting = false;
  private unrecorded: Route | undefined;

  /** `choose` (a `route` call) for admission: a prompted route it returns is left unrecorded. */
  choose(choose: () => Route): Route {
    this.admitting = true;
    this.unrecorded = undefined;
    try {
      return choose();
    } finally {
      this.admitting = false;
    }
  }

  /** Whether a prompted `route` is admission's (then it is remembered, not recorded). */
  defer(route: Route): boolean {
    if (!this.admitting) return false;
    this.unrecorded = route;
    return true;
  }

  /** `leased`, the lease on `route`: recorded with its prompt if `route` is the one admission just chose. */
  leased(route: Route, leased: LeasedRoute, prefix: PrefixHook): LeasedRoute {
    if (this.unrecorded !== route) return leased;
    this.unrecorded = undefined;
    return prefix.finish(leased, leased.lease.id);
  }
}
