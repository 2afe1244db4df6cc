/**
 * The prefix-cache plug-in (docs/prefix-cache.md): `prefixCache(options)` checks its options once
 * and returns what `createSwarm`'s `prefixCache` option takes; each swarm it is given to attaches
 * its own index ({@link PrefixRouter}).
 */
import { SwarmError } from '../core/errors.js';
import type { PrefixPlugin } from '../runtime/prefix-hook.js';
import { prefixCacheIssue, resolvePrefixCache, type PrefixCacheOptions } from './prefix-cache-options.js';
import { PrefixRouter } from './prefix-router.js';

/**
 * The prefix-cache index as a plug-in for `createSwarm` (and `restoreSwarm`, the sessions'
 * `createSwarm`): routes of requests with a prompt go to the copy that holds the most of it
 * cached, unless the imbalance guard sends them by load.
 * @throws {SwarmError} `InvalidInput` naming the bad option
 * @example createSwarm(profiles, swarmConfig(12, 2), { prefixCache: prefixCache({ balanceAbs: 64 }) })
 */
export function prefixCache(options?: PrefixCacheOptions): PrefixPlugin {
  const issue = prefixCacheIssue(options);
  if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
  const resolved = resolvePrefixCache(options);
  return Object.freeze({ kind: 'prefixCache' as const, attach: (host: Parameters<PrefixPlugin['attach']>[0]) => new PrefixRouter(resolved, host) });
}
