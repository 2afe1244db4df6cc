import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { emptyHistory, historyMean, historyStdDev, historyValues, recordInterval } from '../../src/core/heartbeat-history.js';
import { DEFAULT_PHI, firstHistory, phi, phiCrossingMs, phiOptionsIssue, resolvePhiOptions } from '../../src/core/phi.js';

const seed = 20261202;

function historyOf(values: readonly number[], max = 1000) {
  return values.reduce((h, x) => recordInterval(h, x), emptyHistory(max));
}

describe('HeartbeatHistory', () => {
  it('keeps at most max intervals, oldest dropped first, with exact mean and deviation', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 80 }), fc.array(fc.integer({ min: 0, max: 10_000 }), { maxLength: 300 }), (max, values) => {
        const h = historyOf(values, max);
        const kept = values.slice(Math.max(values.length - max, 0));
        expect(historyValues(h)).toEqual(kept);
        expect(h.size).toBe(kept.length);
        if (kept.length === 0) return;
        const mean = kept.reduce((s, x) => s + x, 0) / kept.length;
        const std = Math.sqrt(kept.reduce((s, x) => s + (x - mean) ** 2, 0) / kept.length);
        expect(historyMean(h)).toBeCloseTo(mean, 6);
        expect(historyStdDev(h)).toBeCloseTo(std, 4);
      }),
      { seed, numRuns: 200 },
    );
  });

  it('is persistent: recording leaves the earlier history as it was', () => {
    const a = historyOf([1000, 1100, 900], 3);
    const b = recordInterval(a, 5000);
    expect(historyValues(a)).toEqual([1000, 1100, 900]);
    expect(historyValues(b)).toEqual([1100, 900, 5000]);
  });

  it('refuses a negative or non-finite interval and a bad bound', () => {
    expect(() => recordInterval(emptyHistory(3), -1)).toThrow(/interval must be a finite number >= 0, got -1/);
    expect(() => recordInterval(emptyHistory(3), Number.NaN)).toThrow(RangeError);
    expect(() => emptyHistory(0)).toThrow(/max must be an integer >= 1, got 0/);
  });

  it('does not drift over a long run: the sums stay those of the values kept', () => {
    let h = emptyHistory(1000);
    for (let i = 0; i < 50_000; i++) h = recordInterval(h, 1000 + ((i * 7919) % 400) - 200 + (i % 997 === 0 ? 2500 : 0));
    const kept = historyValues(h);
    const mean = kept.reduce((s, x) => s + x, 0) / kept.length;
    expect(h.size).toBe(1000);
    expect(historyMean(h)).toBeCloseTo(mean, 9);
  });
});

describe('phi', () => {
  const o = resolvePhiOptions();

  it("uses Akka's defaults: threshold 8, 1 s interval, 3 s acceptable pause, 100 ms min deviation, 1,000 samples", () => {
    expect(o).toEqual(DEFAULT_PHI);
    expect(o).toMatchObject({ threshold: 8, expectedIntervalMs: 1000, acceptablePauseMs: 3000, minStdDevMs: 100, maxSamples: 1000 });
  });

  it('is the normal tail, to the logistic approximation: 0.301 at the mean, 0.80 one deviation later', () => {
    const h = historyOf([900, 1100]); // mean 1000, std 100
    expect(phi(4000, h, o)).toBeCloseTo(-Math.log10(0.5), 9);
    expect(phi(4100, h, o)).toBeCloseTo(-Math.log10(0.158655), 2);
  });

  it('seeds the first history as Akka does: the expected interval ± a quarter', () => {
    expect(historyValues(firstHistory(o))).toEqual([750, 1250]);
  });

  it('grows with the silence', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 200, max: 5000 }), { minLength: 1, maxLength: 50 }), fc.integer({ min: 0, max: 20_000 }), fc.integer({ min: 1, max: 5000 }), (values, t, dt) => {
        const h = historyOf(values);
        expect(phi(t + dt, h, o)).toBeGreaterThanOrEqual(phi(t, h, o));
      }),
      { seed, numRuns: 300 },
    );
  });

  it('applies the minimum deviation to a perfectly regular node', () => {
    const h = historyOf([1000, 1000, 1000]);
    expect(phi(4100, h, o)).toBeCloseTo(phi(4100, historyOf([900, 1100]), o), 9);
  });
});

describe('phiCrossingMs', () => {
  const o = resolvePhiOptions();

  it('inverts phi: phi at the crossing time is the level', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 200, max: 5000 }), { minLength: 1, maxLength: 50 }), fc.double({ min: 0.05, max: 14, noNaN: true }), (values, level) => {
        const h = historyOf(values);
        const t = phiCrossingMs(level, h, o);
        expect(phi(t, h, o)).toBeCloseTo(level, 6);
      }),
      { seed, numRuns: 300 },
    );
  });

  it('puts the default down level about 4.5 s after the last heartbeat of a steady 1 s node', () => {
    const h = historyOf([900, 1100]);
    expect(phiCrossingMs(8, h, o)).toBeGreaterThan(4500);
    expect(phiCrossingMs(8, h, o)).toBeLessThan(4550);
    expect(phiCrossingMs(4, h, o)).toBeLessThan(phiCrossingMs(8, h, o));
  });

  it('refuses a level that is not > 0', () => {
    expect(() => phiCrossingMs(0, emptyHistory(1), o)).toThrow(/phi level must be a finite number > 0, got 0/);
  });
});

describe('phiOptionsIssue', () => {
  it('names the bad field', () => {
    expect(phiOptionsIssue(undefined)).toBeUndefined();
    expect(phiOptionsIssue({ threshold: 10, acceptablePauseMs: 0 })).toBeUndefined();
    expect(phiOptionsIssue({ threshold: -1 })).toMatch(/"threshold" must be a finite number > 0, got -1/);
    expect(phiOptionsIssue({ maxSamples: 1.5 })).toMatch(/"maxSamples" must be an integer >= 1/);
    expect(phiOptionsIssue({ threshold: 3, suspectThreshold: 5 })).toMatch(/"suspectThreshold" \(5\) must not exceed "threshold" \(3\)/);
  });
});
