/**
 * A generation admitted before its session opens (docs/serve.md, "Admission"): `swarm.admit`
 * leases the route once a copy has room, and the session starts on that lease instead of routing
 * again. Resumes after a failure reserve as sessions always do, so a resumed step never waits for
 * a slot (it already holds work done).
 */
import type { Swarm } from '../runtime/swarm.js';
import type { LeasedRoute } from '../runtime/types.js';
import { swarmSessionHost } from '../sessions/session-swarm.js';
import type { SessionHost } from '../sessions/session-types.js';

/** A session host over `swarm` whose first route is the admitted `leased`; `unused()` releases it if no session took it. */
export function admittedHost(swarm: Swarm, leased: LeasedRoute): { readonly host: SessionHost; unused(): void } {
  const base = swarmSessionHost(swarm);
  let taken = false;
  const host: SessionHost = {
    ...base,
    route: (request, options) => {
      if (taken) return base.route(request, options);
      taken = true;
      return leased;
    },
  };
  return {
    host,
    unused: () => {
      if (taken) return;
      taken = true;
      try {
        swarm.release(leased.lease, {});
      } catch {
        // expired or its swarm stopped: nothing left to release
      }
    },
  };
}
