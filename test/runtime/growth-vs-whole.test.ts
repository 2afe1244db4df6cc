/**
 * Planning all at once against growing (docs/cost.md, short copies): a random topology is planned whole, and also
 * started on its first nodes with the rest added one by one through `addNode`. Growth never
 * rewrites a serving copy (routes and leases stay valid), so a fast node that arrives after the
 * first copies were cut can only make copies of its own with other newcomers; the whole plan can
 * mix it into any copy. The gap is measured here and stated in docs/cost.md.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSwarm, planSwarm, PlanError, validatePlan } from './fixtures.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from './fixtures.js';

const RUNS = 150;

/** Σ over the model's copies of 1 / slowest stage (layers / score): the plan-quality yardstick. */
function throughput(plan: SwarmPlan, profiles: readonly NodeProfile[], modelId: string): number {
  const score = new Map(profiles.map((p) => [p.id, p.score ?? 1] as const));
  return plan.pipelines
    .filter((p) => p.modelId === modelId)
    .reduce((sum, p) => sum + 1 / Math.max(...p.stages.map((s) => (s.layerEnd - s.layerStart) / (score.get(s.nodeId) ?? 1))), 0);
}

const worldArb = fc.record({
  nodes: fc.array(fc.record({ memoryGb: fc.integer({ min: 4, max: 48 }), score: fc.constantFrom(0.5, 1, 2, 4, 8, 12) }), { minLength: 4, maxLength: 15 }),
  layers: fc.integer({ min: 8, max: 40 }),
  pipelines: fc.integer({ min: 1, max: 2 }),
  first: fc.double({ min: 0.2, max: 1, noNaN: true }),
});

/** Grown / whole throughput for each generated world that both can plan. */
function ratios(fastestFirst: boolean): number[] {
  const out: number[] = [];
  fc.assert(
    fc.property(worldArb, (w) => {
      let profiles: NodeProfile[] = w.nodes.map((n, i) => ({ id: `n${i}`, ...n }));
      if (fastestFirst) profiles = [...profiles].sort((a, b) => (b.score ?? 1) - (a.score ?? 1));
      const model: ModelSpec = { id: 'm', layers: w.layers, pipelines: w.pipelines };
      const k = 1 + Math.floor(w.first * (profiles.length - 1));
      let whole: SwarmPlan;
      try {
        whole = planSwarm(profiles, { models: [model] });
        planSwarm(profiles.slice(0, k), { models: [model] });
      } catch (e) {
        if (e instanceof PlanError && e.code === 'InsufficientCapacity') return;
        throw e;
      }
      const swarm = createSwarm(profiles.slice(0, k), { models: [model] }, { seed: 1 });
      for (const p of profiles.slice(k)) swarm.addNode(p);
      const grown = swarm.state().plan;
      swarm.stop();
      expect(validatePlan(grown, profiles)).toEqual([]);
      out.push(throughput(grown, profiles, 'm') / throughput(whole, profiles, 'm'));
    }),
    { seed: 20260517, numRuns: RUNS },
  );
  return out.sort((a, b) => a - b);
}

const quantile = (xs: readonly number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN;

describe('planning whole against growing with addNode', () => {
  it('keeps the grown plan within 15% of the whole plan in the median, nodes arriving in any order', () => {
    const r = ratios(false);
    expect(r.length).toBeGreaterThan(RUNS / 2);
    // Measured (seed 20260517, 127 worlds): median 0.93, a tenth below 0.69, worst 0.32, two thirds
    // within 15%: the far ones are fast nodes stuck in a slow first copy that growth may not rewrite.
    expect(quantile(r, 0.5)).toBeGreaterThanOrEqual(0.85);
  });

  it('keeps nearly every grown plan within 15% when the fastest nodes arrive first', () => {
    const r = ratios(true);
    expect(r.length).toBeGreaterThan(RUNS / 2);
    // Measured (132 worlds): median 0.99, a tenth below 0.89, worst 0.71, 95% within 15%.
    expect(quantile(r, 0.5)).toBeGreaterThanOrEqual(0.95);
    expect(r.filter((x) => x >= 0.85).length / r.length).toBeGreaterThanOrEqual(0.9);
  });
});
