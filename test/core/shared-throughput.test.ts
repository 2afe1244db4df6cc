/**
 * Counted-once throughput (docs/cost.md "Counted once"): the max-min fair allocation of each
 * node's speed across the stages it holds, and the compute bound no plan exceeds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanError, planSwarm } from '../../src/index.js';
import { planSharedNodes } from '../../src/core/plan.js';
import { computeBound, sharedThroughput } from '../../src/core/shared-throughput.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../../src/index.js';
import { pipe, SEEDED, st } from './fixtures.js';

/** Σ over copies of 1 / slowest stage: the figure that counts a shared node once per copy. */
function perCopy(plan: SwarmPlan, profiles: readonly NodeProfile[]): number {
  const score = new Map(profiles.map((p) => [p.id, p.score ?? 1] as const));
  const layers = new Map(plan.models.map((m) => [m.id, m.layers] as const));
  return plan.pipelines.reduce((sum, p) => sum + (layers.get(p.modelId) ?? 0) / Math.max(...p.stages.map((s) => (s.layerEnd - s.layerStart) / (score.get(s.nodeId) ?? 1))), 0);
}

describe('sharedThroughput', () => {
  it('gives a copy on nodes of its own 1 / its slowest stage', () => {
    const profiles: NodeProfile[] = [{ id: 'a', memoryGb: 8, score: 4 }, { id: 'b', memoryGb: 8, score: 2 }];
    const plan: SwarmPlan = { models: [{ id: 'm', layers: 12 }], pipelines: [pipe('m/0', 'm', st('a', 0, 8), st('b', 8, 12))] };
    const t = sharedThroughput(plan, profiles);
    expect(t.copies.get('m/0')).toBeCloseTo(0.5);
    expect(t.models.get('m')).toBeCloseTo(0.5);
    expect(t.layerRate).toBeCloseTo(6);
    expect(t.bound).toBe(6);
  });

  it("shares a node's speed between the copies it serves, fairly", () => {
    // gpu (10) serves three copies; the per-copy count would give each of them gpu's whole speed.
    const profiles: NodeProfile[] = [{ id: 'gpu', memoryGb: 24, score: 10 }, { id: 'pc', memoryGb: 16, score: 1 }];
    const plan: SwarmPlan = {
      models: [{ id: 'a', layers: 10 }, { id: 'b', layers: 10 }, { id: 'c', layers: 2 }],
      pipelines: [pipe('a/0', 'a', st('gpu', 0, 10)), pipe('b/0', 'b', st('gpu', 0, 2), st('pc', 2, 10)), pipe('c/0', 'c', st('gpu', 0, 2))],
    };
    const t = sharedThroughput(plan, profiles);
    // pc saturates first: b at 1/8. Then gpu: 10 = 10r + 2r + 2/8, r = 0.8125.
    expect(t.copies.get('b/0')).toBeCloseTo(0.125);
    expect(t.copies.get('a/0')).toBeCloseTo(9.75 / 12);
    expect(t.copies.get('c/0')).toBeCloseTo(9.75 / 12);
    expect(t.layerRate).toBeCloseTo(11);
    expect(t.layerRate).toBeLessThanOrEqual(t.bound + 1e-9);
    expect(perCopy(plan, profiles)).toBeGreaterThan(t.bound);
  });

  it('leaves out the pipelines not included, and a copy through an unknown node gets 0', () => {
    const profiles: NodeProfile[] = [{ id: 'a', memoryGb: 8, score: 4 }];
    const plan: SwarmPlan = { models: [{ id: 'm', layers: 4 }, { id: 'x', layers: 4 }], pipelines: [pipe('m/0', 'm', st('a', 0, 4)), pipe('x/0', 'x', st('a', 0, 4)), pipe('x/1', 'x', st('ghost', 0, 4))] };
    expect(sharedThroughput(plan, profiles).copies.get('m/0')).toBeCloseTo(0.5);
    const only = sharedThroughput(plan, profiles, { include: (id) => id !== 'x/0' });
    expect(only.copies.get('m/0')).toBeCloseTo(1);
    expect(only.copies.get('x/0')).toBe(0);
    expect(only.copies.get('x/1')).toBe(0);
  });

  it('bounds by the nodes with memory for a layer of some model, KV reserve counted', () => {
    const profiles: NodeProfile[] = [{ id: 'a', memoryGb: 1, score: 3 }, { id: 'b', memoryGb: 0.5, score: 5 }];
    expect(computeBound(profiles, [{ id: 'm', layers: 4, layerGb: 0.5 }])).toBe(8);
    expect(computeBound(profiles, [{ id: 'm', layers: 4, layerGb: 0.5, kvReserveGb: 0.25 }])).toBe(3);
  });

  it('never reports more than the compute bound on random multi-model swarms, and is max-min fair', () => {
    const nodeArb = fc.record({ memoryGb: fc.integer({ min: 1, max: 24 }), score: fc.integer({ min: 1, max: 9 }) });
    const modelArb = fc.record({ layers: fc.integer({ min: 2, max: 40 }), layerGb: fc.constantFrom(0.25, 0.5, 1), pipelines: fc.integer({ min: 1, max: 3 }) });
    let planned = 0;
    let sharedNodes = 0;
    const check = (plan: SwarmPlan, profiles: readonly NodeProfile[]): void => {
      planned++;
      const t = sharedThroughput(plan, profiles);
      expect(t.layerRate).toBeLessThanOrEqual(t.bound * (1 + 1e-9));
      const score = new Map(profiles.map((p) => [p.id, p.score ?? 1] as const));
      const load = new Map<string, number>();
      const rateOf = (id: string) => t.copies.get(id) ?? 0;
      for (const p of plan.pipelines) for (const s of p.stages) load.set(s.nodeId, (load.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * rateOf(p.id));
      for (const [id, l] of load) expect(l).toBeLessThanOrEqual((score.get(id) ?? 0) * (1 + 1e-9));
      if ([...load.keys()].some((id) => plan.pipelines.filter((p) => p.stages.some((s) => s.nodeId === id)).length > 1)) sharedNodes++;
      // Max-min fair: every copy crosses a saturated node where no copy runs faster than it.
      for (const p of plan.pipelines) {
        const r = rateOf(p.id);
        expect(r).toBeGreaterThan(0);
        const bottleneck = p.stages.some((s) => {
          const saturated = (load.get(s.nodeId) ?? 0) >= (score.get(s.nodeId) ?? 0) * (1 - 1e-9);
          const fastest = plan.pipelines.every((q) => !q.stages.some((x) => x.nodeId === s.nodeId) || rateOf(q.id) <= r * (1 + 1e-9));
          return saturated && fastest;
        });
        expect(bottleneck, p.id).toBe(true);
      }
    };
    fc.assert(
      fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 30 }), fc.array(modelArb, { minLength: 2, maxLength: 4 }), (raw, specs) => {
        const profiles: NodeProfile[] = raw.map((p, i) => ({ id: `n${i}`, ...p }));
        const models: ModelSpec[] = specs.map((m, i) => ({ id: `m${i}`, ...m }));
        // planSwarm's plans, and the plans of the planner that shares nodes between models.
        for (const planner of [planSwarm, planSharedNodes]) {
          try {
            check(planner(profiles, { models }), profiles);
          } catch (e) {
            if (e instanceof PlanError && e.code === 'InsufficientCapacity') return;
            throw e;
          }
        }
      }),
      { ...SEEDED, numRuns: 300 },
    );
    expect(planned).toBeGreaterThan(200);
    // Not vacuous: some of these plans share nodes between copies.
    expect(sharedNodes).toBeGreaterThan(10);
  });
});
