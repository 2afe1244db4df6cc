import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runEngine, simClock, OUTCOME } from '../../src/sim/load/engine.js';
import { EventQueue } from '../../src/sim/load/event-queue.js';
import { quantile } from '../../src/sim/load/metrics.js';
import { randomPolicy } from '../../src/sim/load/baselines.js';
import { createRng, deriveSeed } from '../../src/sim/load/rng.js';
import { runLoadSim } from '../../src/sim/load/run.js';
import { buildTopology } from '../../src/sim/load/load-topology.js';
import type { Arrival, Workload } from '../../src/sim/load/workloads.js';

describe('EventQueue', () => {
  it('pops by time, and in insertion order at equal times', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (times) => {
        const q = new EventQueue<number>();
        times.forEach((t, i) => q.push(t, i));
        const popped: number[] = [];
        while (q.size > 0) popped.push(q.pop() as number);
        const expected = times.map((t, i) => [t, i] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => i);
        expect(popped).toEqual(expected);
      }),
      { seed: 42, numRuns: 200 },
    );
  });
});

describe('createRng', () => {
  it('repeats for a seed and draws exponentials with the asked mean', () => {
    const a = createRng(9);
    const b = createRng(9);
    const xs = Array.from({ length: 50_000 }, () => a.exp(10));
    expect(Array.from({ length: 50_000 }, () => b.exp(10))).toEqual(xs);
    expect(xs.reduce((s, x) => s + x, 0) / xs.length).toBeCloseTo(10, 0);
    expect(deriveSeed(1, 'w1', 'arrivals')).not.toBe(deriveSeed(1, 'w1', 'sizes'));
  });
});

/** One node, one slot, no hop delay: an M/M/1 queue with service rate mu and arrival rate lambda. */
function mm1(lambda: number, meanServiceMs: number, requests: number, seed: number): Float64Array {
  const topology = buildTopology({ nodes: [{ id: 'solo', memoryGb: 1, score: 1 }], model: { id: 'm', layers: 1 }, msPerLayer: meanServiceMs, hopMs: 0 });
  const rng = createRng(seed);
  const arrivals: Arrival[] = [];
  let t = 0;
  for (let i = 0; i < requests; i++) {
    t += rng.exp(1 / lambda);
    arrivals.push({ time: t, size: rng.exp(1), router: 0, burst: -1 });
  }
  const workload: Workload = { id: 'mm1', label: 'M/M/1', rho: lambda * meanServiceMs, routers: 1, arrivals, disruptions: [], bursts: 0 };
  const clock = simClock();
  const trace = runEngine({
    topology,
    workload,
    clock,
    timeoutMs: 1e9,
    routers: (view) => [randomPolicy.create({ topology, clock, view, routerIndex: 0, seed, rng: createRng(seed) })],
  });
  expect([...trace.outcome].every((o) => o === OUTCOME.ok)).toBe(true);
  return trace.latency;
}

describe('runEngine', () => {
  it('matches the M/M/1 formulas: mean sojourn 1/(mu - lambda), sojourn time exponential', () => {
    const mu = 1 / 10;
    for (const rho of [0.5, 0.7]) {
      const lambda = rho * mu;
      const latency = mm1(lambda, 10, 200_000, 7);
      const mean = latency.reduce((s, x) => s + x, 0) / latency.length;
      const theory = 1 / (mu - lambda);
      expect(Math.abs(mean - theory) / theory).toBeLessThan(0.05);
      const sorted = Float64Array.from(latency).sort();
      // Sojourn in M/M/1 FIFO is exponential with rate mu - lambda: p99 = ln(100) / (mu - lambda).
      const p99 = Math.log(100) / (mu - lambda);
      expect(Math.abs(quantile(sorted, 0.99) - p99) / p99).toBeLessThan(0.1);
      expect(Math.abs(quantile(sorted, 0.5) - Math.log(2) / (mu - lambda)) / (Math.log(2) / (mu - lambda))).toBeLessThan(0.05);
    }
  });

  it('accounts for every request once: ok, timeout, error or unroutable', () => {
    const result = runLoadSim({ seeds: 1, requests: 1500, workloads: ['w4-black-hole'], policies: [randomPolicy] });
    const m = result.workloads[0]?.policies[0]?.median;
    expect(m?.timeoutRate).toBeGreaterThan(0); // the black hole swallowed some
    expect(m?.deadSent).toBeGreaterThan(0);
    // Each copy's share is rounded to 4 decimals: six of them may sum to 1 ± 3e-4.
    expect(Math.abs((m?.shares.reduce((s, c) => s + c.traffic, 0) ?? 0) - 1)).toBeLessThanOrEqual(3e-4 + 1e-12);
  });
});

describe('runLoadSim', () => {
  it('prints byte-identical results for the same seed, and different ones for another seed', () => {
    const options = { seeds: 1, requests: 800, workloads: ['w2', 'w4-fail-fast', 'w5'] } as const;
    const a = JSON.stringify(runLoadSim({ ...options, seed: 3 }));
    const b = JSON.stringify(runLoadSim({ ...options, seed: 3 }));
    const c = JSON.stringify(runLoadSim({ ...options, seed: 4 }));
    expect(b).toBe(a);
    expect(c).not.toBe(a);
  });

  it('rejects an unknown workload by name', () => {
    expect(() => runLoadSim({ seeds: 1, requests: 100, workloads: ['w9'] })).toThrow(/unknown workload "w9"/);
  });
});
