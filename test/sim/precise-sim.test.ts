/**
 * Precise mode in the W7 engine (src/sim/load/precise-sim.ts): the first stages' caches emit KV
 * events, ours fed by them every 100 ms finds what an index fed at once finds, and replicas that
 * share them keep the hit rate one router has, where replicas each estimating lose it.
 */
import { describe, expect, it } from 'vitest';
import { replicaPolicies, runPreciseHitRates } from '../../src/sim/load/precise-sim.js';

describe('precise mode, simulated', () => {
  it('on W7a, 100 ms reports find what events at once find, and the oracle\'s hit rate', () => {
    const [row] = runPreciseHitRates([1], 0.15, ['w7a']);
    expect(row!.workload).toBe('w7a-shared-prefix');
    expect(row!.hitRates['ours-precise']).toBeGreaterThan(0.4); // a fifth of W7a: its warm-up weighs more
    expect(row!.ofOracle['ours-precise']).toBeGreaterThanOrEqual(0.99);
    expect(row!.hitRates['ours-precise']! / row!.hitRates['ours-precise-now']!).toBeGreaterThanOrEqual(0.99);
  });

  it('four replicas sharing precise reports keep most of one router\'s hit rate; four estimating lose it', () => {
    const policies = replicaPolicies([1, 4]);
    const [row] = runPreciseHitRates([1], 0.15, ['w7a'], policies);
    const h = row!.hitRates;
    expect(h['ours-precise-x1']).toBe(h['ours-estimated-x1']);
    expect(h['ours-precise-x4']!).toBeGreaterThan(0.85 * h['ours-precise-x1']!);
    expect(h['ours-estimated-x4']!).toBeLessThan(0.6 * h['ours-estimated-x1']!);
  });
});
