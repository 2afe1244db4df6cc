/**
 * The prefix-cache plug-in in precise mode (docs/prefix-cache.md, "Precise mode"): the same index
 * as {@link prefixCache}, and each swarm it is attached to gets {@link PreciseFeeds} that the
 * engines' reports feed. The orchestrator plugs it in; a library user hands it each node's
 * {@link KvReport} through `feeds()?.accept(nodeId, report)`.
 */
import { SwarmError } from '../core/errors.js';
import type { PrefixPlugin } from '../runtime/prefix-hook.js';
import { prefixCacheIssue, resolvePrefixCache, type PrefixCacheOptions } from './prefix-cache-options.js';
import { PreciseFeeds } from './precise-feeds.js';
import { PrefixRouter } from './prefix-router.js';

/** The plug-in and the feeds of the swarm it was last attached to. */
export interface PreciseCache {
  readonly plugin: PrefixPlugin;
  /** The feeds of the last swarm attached (undefined before any). */
  feeds(): PreciseFeeds | undefined;
}

/**
 * The prefix-cache plug-in whose copies the engines' reports can make precise.
 * @throws {SwarmError} `InvalidInput` naming the bad option
 */
export function preciseCache(options?: PrefixCacheOptions): PreciseCache {
  const issue = prefixCacheIssue(options);
  if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
  const resolved = resolvePrefixCache(options);
  let last: PreciseFeeds | undefined;
  const plugin: PrefixPlugin = Object.freeze({
    kind: 'prefixCache' as const,
    attach: (host: Parameters<PrefixPlugin['attach']>[0]) => {
      const router = new PrefixRouter(resolved, host);
      router.precise = last = new PreciseFeeds(() => router.built);
      return router;
    },
  });
  return { plugin, feeds: () => last };
}
