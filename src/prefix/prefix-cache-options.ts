/**
 * The settings of the prefix-cache index (docs/prefix-cache.md), their defaults and their check,
 * and the two pure rules the router applies with them: the price of a prompt's tokens given how
 * many a copy holds cached, and the imbalance guard.
 */
import { describeValue } from '../core/describe.js';
import type { CostWeights } from '../core/types.js';

/** How the swarm remembers what each copy has cached: the options of `prefixCache(options)` (`hecate-swarm/prefix`). */
export interface PrefixCacheOptions {
  /** Characters per block of a text prompt. @defaultValue 64 */
  readonly textBlockChars?: number;
  /** Token ids per block of an id prompt. @defaultValue 16 */
  readonly idBlockSize?: number;
  /** What a cached prompt token costs, as a share of an uncached one (a decode-like share). @defaultValue 0.1 */
  readonly cachedShare?: number;
  /**
   * Scales the tokens term of a request with a prompt, so the affinity can be tuned without
   * leaving the routing index (unlike `weights.tokens`). @defaultValue 1: the original price
   */
  readonly tokenWeight?: number;
  /**
   * Affinity: when some copy holds at least this share of the prompt's tokens (more than the copy
   * load would choose), the request goes to the copy holding the most (the cheapest of them),
   * unless the guard trips; below it `placement` decides. 1 leaves affinity to whole prompts.
   * @defaultValue 0.3 (SGLang's `cache_threshold`)
   */
  readonly cacheThreshold?: number;
  /**
   * Where a prompt goes that no copy holds `cacheThreshold` of: `'fill'`, the copy that has taken
   * the fewest new prompt tokens for its KV memory, so new prefixes spread over the caches;
   * `'cost'`, the cheapest copy by the cost, its cached tokens priced at `cachedShare`
   * (for copies of very different speeds: fill does not weigh speed). Either way the guard
   * applies. @defaultValue 'fill'
   */
  readonly placement?: 'fill' | 'cost';
  /**
   * How the guard weighs the copy the cache prefers against the copy load would choose
   * (docs/prefix-cache.md, "The guard"): `'delay'`, the time each would take to start and prefill
   * this request, its queue counted past the copy's effective concurrency (declared `slots`, an
   * engine's report, or learnt from latencies), the cached copy losing when it is `balanceRel`
   * times slower; `'count'`, the requests in flight (`balanceAbs`, `balanceAbsFill`). @defaultValue 'delay'
   */
  readonly guard?: 'delay' | 'count';
  /**
   * The count guard's absolute threshold: the cached copy must hold more than this many more requests
   * in flight than the copy load would choose (without declared slots on both). @defaultValue 64
   * (SGLang's `balance_abs_threshold`)
   */
  readonly balanceAbs?: number;
  /** The same, as a share of the copies' slots, when both declare slots. @defaultValue 0.25 */
  readonly balanceAbsFill?: number;
  /** The guard's relative threshold: the cached copy's delay (or load) more than this many times the other's. @defaultValue 1.5 */
  readonly balanceRel?: number;
  /** At most this many blocks per copy, whatever its KV memory: the index's own memory bound. @defaultValue 8192 */
  readonly maxBlocksPerCopy?: number;
}

/** Every setting with its default filled in. */
export type ResolvedPrefixCache = { readonly [K in Exclude<keyof PrefixCacheOptions, 'placement' | 'guard'>]-?: number } & { readonly placement: 'fill' | 'cost'; readonly guard: 'delay' | 'count' };

/** The defaults (docs/prefix-cache.md). */
export const PREFIX_CACHE_DEFAULTS: ResolvedPrefixCache = Object.freeze({
  textBlockChars: 64,
  idBlockSize: 16,
  cachedShare: 0.1,
  tokenWeight: 1,
  cacheThreshold: 0.3,
  placement: 'fill',
  guard: 'delay',
  balanceAbs: 64,
  balanceAbsFill: 0.25,
  balanceRel: 1.5,
  maxBlocksPerCopy: 8192,
});

/**
 * A model's KV cache per token over all its layers, in GB, when the model does not say
 * (`ModelSpec.kvGbPerToken`): 128 KB, Llama 3 8B in 16-bit precision (2 × 32 layers × 8 KV heads
 * × 128 dimensions × 2 bytes = 131,072 bytes, rounded).
 */
export const DEFAULT_KV_GB_PER_TOKEN = 0.000128;

const INTEGER_KEYS = ['textBlockChars', 'idBlockSize', 'maxBlocksPerCopy'] as const;

/** What is wrong with the options of `prefixCache(options)`, or undefined. */
export function prefixCacheIssue(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `prefixCache options must be an object { textBlockChars?, idBlockSize?, … }, got ${describeValue(value)}`;
  const o = value as Record<string, unknown>;
  for (const key in o) {
    if (!(key in PREFIX_CACHE_DEFAULTS)) return `prefixCache option ${describeValue(key)} is unknown (known: ${Object.keys(PREFIX_CACHE_DEFAULTS).join(', ')})`;
    const v = o[key];
    if (v === undefined) continue;
    if (key === 'placement') {
      if (v !== 'fill' && v !== 'cost') return `prefixCache option "placement" must be "fill" or "cost", got ${describeValue(v)}`;
      continue;
    }
    if (key === 'guard') {
      if (v !== 'delay' && v !== 'count') return `prefixCache option "guard" must be "delay" or "count", got ${describeValue(v)}`;
      continue;
    }
    const integer = (INTEGER_KEYS as readonly string[]).includes(key);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (integer && (!Number.isInteger(v) || v < 1 || v > 1_048_576))) {
      return `prefixCache option "${key}" must be ${integer ? 'an integer from 1 to 1048576' : 'a finite number >= 0'}, got ${describeValue(v)}`;
    }
  }
  if (typeof o['cacheThreshold'] === 'number' && o['cacheThreshold'] > 1) return `prefixCache option "cacheThreshold" must be from 0 to 1, got ${o['cacheThreshold']}`;
  if (typeof o['cachedShare'] === 'number' && o['cachedShare'] > 1) return `prefixCache option "cachedShare" must be from 0 to 1, got ${o['cachedShare']}`;
  if (typeof o['balanceRel'] === 'number' && o['balanceRel'] < 1) return `prefixCache option "balanceRel" must be >= 1, got ${o['balanceRel']}`;
  return undefined;
}

/** The settings with defaults filled in (checked by {@link prefixCacheIssue} first). */
export function resolvePrefixCache(value: PrefixCacheOptions | undefined): ResolvedPrefixCache {
  return Object.freeze({ ...PREFIX_CACHE_DEFAULTS, ...Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== undefined)) }) as ResolvedPrefixCache;
}

/**
 * The tokens term with `cached` of the request's `tokens` held by the copy: the uncached ones at
 * the original design's price, `w_p · 10 / 1024` each, the cached ones at `cachedShare` of it
 * (docs/cost.md), times `scale` (`tokenWeight`). With nothing cached and scale 1 it is the
 * original `tokensCost` exactly.
 */
export function promptTokensCost(tokens: number, cached: number, share: number, weights: CostWeights, scale = 1): number {
  const c = Math.min(cached, tokens);
  return (scale * weights.tokens * 10 * (tokens - c + share * c)) / 1024;
}

/**
 * The imbalance guard (docs/prefix-cache.md): whether the copy the cache prefers is too loaded
 * next to the copy load alone would choose, so the route goes by load. Two conditions, both
 * needed, as SGLang's `balance_abs_threshold` and `balance_rel_threshold`: the difference past the
 * absolute threshold and the ratio past the relative one. Load is the requests in flight on a
 * copy (its busiest node); with declared slots on both copies, their fill (in flight ÷ slots).
 */
export function imbalanced(
  cachedLoad: number,
  cachedSlots: number | undefined,
  loadLoad: number,
  loadSlots: number | undefined,
  o: ResolvedPrefixCache,
): boolean {
  if (cachedSlots !== undefined && loadSlots !== undefined) {
    const a = cachedLoad / cachedSlots;
    const b = loadLoad / loadSlots;
    return a - b > o.balanceAbsFill && a > o.balanceRel * b;
  }
  return cachedLoad - loadLoad > o.balanceAbs && cachedLoad > o.balanceRel * loadLoad;
}
