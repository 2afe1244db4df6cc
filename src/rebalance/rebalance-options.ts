/**
 * The rebalancer's options and their documented defaults (docs/rebalance.md "Defaults"), checked
 * once: a bad option is `SwarmError` `InvalidInput` naming it, and changes nothing.
 */
import { describeValue } from '../core/describe.js';
import { SwarmError } from '../core/errors.js';

/** What a rebalance weighs (docs/rebalance.md). Every field is optional. */
export interface RebalanceOptions {
  /**
   * Hysteresis: a move is made only when it raises the counted-once throughput of the copies it
   * replaces by at least this share of their own (a new copy on idle nodes always passes). A
   * number in (0, 1]. @defaultValue 0.05
   */
  readonly minGain?: number;
  /**
   * How long a gain is counted for, in seconds: a move's value is its gain over what is left of
   * the horizon once its spans are loaded, less the throughput it loses while they load.
   * @defaultValue 600
   */
  readonly horizonSeconds?: number;
  /**
   * A node's load bandwidth when its profile declares none (`NodeProfile.loadGbPerSecond`), in GB
   * per second: a span of `b` GB loads in `b ÷ bandwidth` seconds. @defaultValue 1
   */
  readonly loadGbPerSecond?: number;
  /** Rounds of moves at most (each round makes every non-overlapping move that passes). @defaultValue 64 */
  readonly maxRounds?: number;
  /** The worst copies of a model each round pairs with the others (a bounded search). @defaultValue 8 */
  readonly worstCopies?: number;
}

/** The options with every default filled in. */
export type ResolvedRebalanceOptions = Required<RebalanceOptions>;

/** The documented defaults (docs/rebalance.md "Defaults"). */
export const REBALANCE_DEFAULTS: ResolvedRebalanceOptions = Object.freeze({
  minGain: 0.05,
  horizonSeconds: 600,
  loadGbPerSecond: 1,
  maxRounds: 64,
  worstCopies: 8,
});

const KEYS = new Set(Object.keys(REBALANCE_DEFAULTS));

/** Why `options` is not a valid {@link RebalanceOptions}, or undefined. */
export function rebalanceOptionsIssue(options: unknown): string | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) return `rebalance options must be an object, got ${describeValue(options)}`;
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) if (!KEYS.has(key)) return `unknown rebalance option "${key}" (known: ${[...KEYS].join(', ')})`;
  const positive = (key: string, max = Number.POSITIVE_INFINITY) => {
    const v = o[key];
    if (v === undefined) return undefined;
    return typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= max ? undefined : `rebalance option "${key}" must be a finite number in (0, ${max}], got ${describeValue(v)}`;
  };
  const integer = (key: string, max: number) => {
    const v = o[key];
    if (v === undefined) return undefined;
    return Number.isInteger(v) && (v as number) >= 1 && (v as number) <= max ? undefined : `rebalance option "${key}" must be an integer in [1, ${max}], got ${describeValue(v)}`;
  };
  return positive('minGain', 1) ?? positive('horizonSeconds', 1e9) ?? positive('loadGbPerSecond', 1e6) ?? integer('maxRounds', 10_000) ?? integer('worstCopies', 1000);
}

/**
 * The options with the defaults filled in.
 * @throws {SwarmError} `InvalidInput` naming the bad option
 */
export function resolveRebalanceOptions(options?: RebalanceOptions): ResolvedRebalanceOptions {
  const issue = rebalanceOptionsIssue(options);
  if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
  const given = options ?? {};
  return {
    minGain: given.minGain ?? REBALANCE_DEFAULTS.minGain,
    horizonSeconds: given.horizonSeconds ?? REBALANCE_DEFAULTS.horizonSeconds,
    loadGbPerSecond: given.loadGbPerSecond ?? REBALANCE_DEFAULTS.loadGbPerSecond,
    maxRounds: given.maxRounds ?? REBALANCE_DEFAULTS.maxRounds,
    worstCopies: given.worstCopies ?? REBALANCE_DEFAULTS.worstCopies,
  };
}
