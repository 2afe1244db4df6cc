import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { banMs, DEFAULT_EJECTION, ejectionOptionsIssue, ejectionRoom, maxBanLevel, resolveEjectionOptions, shouldEject } from '../../src/core/ejection.js';

describe('ejection policy', () => {
  it('defaults: 5 consecutive failures, a 15 s ban doubling up to 300 s, at most half the swarm out', () => {
    expect(resolveEjectionOptions()).toEqual(DEFAULT_EJECTION);
    expect(DEFAULT_EJECTION).toEqual({ consecutiveFailures: 5, banMs: 15_000, maxBanMs: 300_000, maxEjectedShare: 0.5 });
  });

  it('doubles the ban with each ejection in a row, up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => banMs(n))).toEqual([15_000, 30_000, 60_000, 120_000, 240_000, 300_000, 300_000]);
    expect(maxBanLevel()).toBe(6);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), (n) => {
        expect(banMs(n + 1)).toBeGreaterThanOrEqual(banMs(n));
        expect(banMs(n)).toBeLessThanOrEqual(DEFAULT_EJECTION.maxBanMs);
        expect(banMs(Math.max(n, maxBanLevel()))).toBe(DEFAULT_EJECTION.maxBanMs);
      }),
      { seed: 7, numRuns: 100 },
    );
  });

  it('never lets more than the share of members be ejected', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 }), fc.double({ min: 0, max: 1, noNaN: true }), (members, share) => {
        const o = resolveEjectionOptions({ maxEjectedShare: share });
        let ejected = 0;
        while (ejectionRoom(ejected, members, o)) ejected++;
        expect(ejected).toBeLessThanOrEqual(share * members + 1e-9);
        expect(ejected + 1).toBeGreaterThan(share * members);
      }),
      { seed: 7, numRuns: 300 },
    );
    expect(ejectionRoom(0, 1)).toBe(false); // a lone node is never ejected at 50%
    expect(ejectionRoom(0, 2)).toBe(true);
    expect(ejectionRoom(1, 2)).toBe(false);
  });

  it('ejects at the threshold, or at the first failure on probation', () => {
    expect(shouldEject(4, false)).toBe(false);
    expect(shouldEject(5, false)).toBe(true);
    expect(shouldEject(1, true)).toBe(true);
    expect(shouldEject(0, true)).toBe(false);
  });

  it('names a bad option', () => {
    expect(ejectionOptionsIssue({ consecutiveFailures: 0 })).toMatch(/"consecutiveFailures" must be an integer >= 1, got 0/);
    expect(ejectionOptionsIssue({ maxEjectedShare: 1.5 })).toMatch(/"maxEjectedShare" must be a number in \[0, 1\], got 1.5/);
    expect(ejectionOptionsIssue({ banMs: 10, maxBanMs: 5 })).toMatch(/"maxBanMs" \(5\) must not be below "banMs" \(10\)/);
    expect(ejectionOptionsIssue({ banMs: 400_000 })).toBeUndefined();
  });
});
