/**
 * `hecate-swarm/prefix`: the prefix-cache index (docs/prefix-cache.md), its own entry so a swarm
 * that routes without prompts does not carry it. Plug it into a swarm through its options:
 * `createSwarm(profiles, config, { prefixCache: prefixCache({ balanceAbs: 64 }) })`. The entry
 * exports what a user configures and reads; the index's parts are the simulators' and tests',
 * imported from their own files.
 * @packageDocumentation
 */
export { prefixCache } from './prefix-cache.js';
export { PREFIX_CACHE_DEFAULTS, DEFAULT_KV_GB_PER_TOKEN, prefixCacheIssue } from './prefix-cache-options.js';
export type { PrefixCacheOptions } from './prefix-cache-options.js';
export { preciseCache, type PreciseCache } from './precise-cache.js';
export { kvReportIssue, type KvBlock, type KvEvent, type KvReport, type KvSnapshot } from './kv-feed.js';
export type { PreciseFeeds, PreciseStats } from './precise-feeds.js';
export type { PrefixPlugin, PrefixStats } from '../runtime/prefix-hook.js';
export type { Prompt } from '../core/prompt.js';
