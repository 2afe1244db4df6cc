/** The prefix cache's settings, its tokens term and its imbalance guard (docs/prefix-cache.md). */
import { describe, expect, it } from 'vitest';
import { DEFAULT_WEIGHTS, tokensCost } from '../../src/core/cost.js';
import { imbalanced, PREFIX_CACHE_DEFAULTS, prefixCacheIssue, promptTokensCost, resolvePrefixCache } from '../../src/prefix/prefix-cache-options.js';

describe('prefixCacheIssue', () => {
  it('takes nothing, and any setting within its range', () => {
    expect(prefixCacheIssue(undefined)).toBeUndefined();
    expect(prefixCacheIssue({ textBlockChars: 32, cachedShare: 0, balanceRel: 1, tokenWeight: 5 })).toBeUndefined();
  });

  it.each([
    [true, /prefixCache options must be an object/],
    [false, /prefixCache options must be an object/],
    [{ textBlock: 3 }, /prefixCache option "textBlock" is unknown/],
    [{ idBlockSize: 2.5 }, /prefixCache option "idBlockSize" must be an integer from 1/],
    [{ maxBlocksPerCopy: 0 }, /prefixCache option "maxBlocksPerCopy" must be an integer from 1/],
    [{ balanceAbs: -1 }, /prefixCache option "balanceAbs" must be a finite number >= 0/],
    [{ cacheThreshold: 1.5 }, /prefixCache option "cacheThreshold" must be from 0 to 1, got 1.5/],
    [{ cachedShare: 2 }, /prefixCache option "cachedShare" must be from 0 to 1/],
    [{ balanceRel: 0.5 }, /prefixCache option "balanceRel" must be >= 1/],
  ])('refuses %j naming the field', (value, message) => {
    expect(prefixCacheIssue(value)).toMatch(message);
  });

  it('fills the defaults', () => {
    expect(resolvePrefixCache({ idBlockSize: 8 })).toEqual({ ...PREFIX_CACHE_DEFAULTS, idBlockSize: 8 });
  });
});

describe('promptTokensCost', () => {
  it('is the original tokens term with nothing cached, and prices cached tokens at the share', () => {
    expect(promptTokensCost(4096, 0, 0.1, DEFAULT_WEIGHTS)).toBe(tokensCost(4096, DEFAULT_WEIGHTS));
    expect(promptTokensCost(1024, 1024, 0.1, DEFAULT_WEIGHTS)).toBeCloseTo(1, 12);
    expect(promptTokensCost(1024, 5000, 0.1, DEFAULT_WEIGHTS)).toBeCloseTo(1, 12); // never more cached than tokens
    expect(promptTokensCost(1024, 0, 0.1, DEFAULT_WEIGHTS, 3)).toBe(30);
  });
});

describe('imbalanced', () => {
  const o = PREFIX_CACHE_DEFAULTS;
  it('needs both conditions on in-flight counts: more than 64 more, and more than 1.5 times', () => {
    expect(imbalanced(65, undefined, 0, undefined, o)).toBe(true);
    expect(imbalanced(64, undefined, 0, undefined, o)).toBe(false); // 64 more is not more than 64
    expect(imbalanced(200, undefined, 132, undefined, o)).toBe(true);
    expect(imbalanced(198, undefined, 132, undefined, o)).toBe(false); // 1.5 times is not more than 1.5 times
    expect(imbalanced(200, undefined, 135, undefined, o)).toBe(false); // 65 more, but not 1.5 times
  });

  it('weighs load against declared slots when both copies have them', () => {
    expect(imbalanced(3, 16, 0, 16, o)).toBe(false); // 3 of 16 is under a quarter
    expect(imbalanced(5, 16, 0, 16, o)).toBe(true);
    expect(imbalanced(8, 32, 2, 4, o)).toBe(false); // a quarter full against a half full
    expect(imbalanced(65, 16, 0, undefined, o)).toBe(true); // one without slots: counts
    expect(imbalanced(5, 16, 0, undefined, o)).toBe(false);
  });
});
