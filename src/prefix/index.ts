/**
 * `hecate-swarm/prefix`: the prefix-cache index (docs/prefix-cache.md), its own entry so a swarm
 * that routes without prompts does not carry it. Plug it into a swarm through its options:
 * `createSwarm(profiles, config, { prefixCache: prefixCache({ balanceAbs: 64 }) })`.
 * @packageDocumentation
 */
export { prefixCache } from './prefix-cache.js';
export { PrefixRouter } from './prefix-router.js';
export { PrefixIndex } from './prefix-index.js';
export type { CopyCache } from './prefix-index.js';
export { FillOrder, FILL_VISITED } from './fill-order.js';
export { CopyLoad, ConcurrencyLearner, REQUEST_TOKENS } from './copy-load.js';
export type { LoadNote } from './copy-load.js';
export type { FillSlot } from './fill-order.js';
export { PREFIX_CACHE_DEFAULTS, DEFAULT_KV_GB_PER_TOKEN, prefixCacheIssue, resolvePrefixCache, promptTokensCost, imbalanced } from './prefix-cache-options.js';
export type { PrefixCacheOptions, ResolvedPrefixCache } from './prefix-cache-options.js';
export { promptBlocks, emptyBlocks, stringSeed } from './prompt-blocks.js';
export type { PromptBlocks } from './prompt-blocks.js';
export { kvCapacities } from './kv-capacity.js';
export type { PrefixPlugin, PrefixHook, PrefixHost, PrefixStats } from '../runtime/prefix-hook.js';
export type { Prompt } from '../core/prompt.js';
