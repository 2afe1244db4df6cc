import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanError, planSwarm, validatePlan } from '../../src/index.js';
import { splitLayers } from '../../src/core/plan.js';
import type { ModelSpec, NodeProfile, PlanConfig, SwarmPlan } from '../../src/index.js';
import { coversExactly, SEEDED, thrown } from './fixtures.js';

const planError = (fn: () => unknown): PlanError => thrown(fn, PlanError);

/** Layers each node holds, summed over every stage of every model, in GB. */
function usedGb(plan: SwarmPlan): Map<string, number> {
  const used = new Map<string, number>();
  for (const p of plan.pipelines) {
    const layerGb = plan.models.find((m) => m.id === p.modelId)?.layerGb ?? 1;
    for (const s of p.stages) used.set(s.nodeId, (used.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * layerGb);
  }
  return used;
}

const layersOn = (plan: SwarmPlan, nodeId: string) =>
  plan.pipelines.flatMap((p) => p.stages).filter((s) => s.nodeId === nodeId).reduce((n, s) => n + s.layerEnd - s.layerStart, 0);

const six: NodeProfile[] = [
  { id: 'gpu', memoryGb: 24, score: 10 },
  { id: 'mac', memoryGb: 16, score: 6 },
  { id: 'pc', memoryGb: 16, score: 4 },
  { id: 'laptop', memoryGb: 8, score: 2 },
  { id: 'nuc', memoryGb: 8, score: 2 },
  { id: 'pi', memoryGb: 4, score: 1 },
];

describe('planSwarm', () => {
  it('plans at least the asked number of copies of one model, on disjoint node sets', () => {
    const plan = planSwarm(six, { models: [{ id: 'base', layers: 12, pipelines: 3 }] });
    // `pipelines` is a minimum: nodes beyond the three copies form further ones (docs/cost.md).
    expect(plan.pipelines.length).toBeGreaterThanOrEqual(3);
    expect(plan.pipelines.map((p) => p.id)).toEqual(plan.pipelines.map((_, i) => `base/${i}`));
    const sets = plan.pipelines.map((p) => p.stages.map((s) => s.nodeId));
    const all = sets.flat();
    expect(new Set(all).size).toBe(all.length);
    for (const p of plan.pipelines) expect(coversExactly(p.stages, 12)).toBe(true);
  });

  it('plans one copy when the model does not say, and further copies only from nodes a copy did not take', () => {
    const plan = planSwarm(six, { models: [{ id: 'base', layers: 12 }] });
    expect(plan.pipelines.length).toBeGreaterThanOrEqual(1);
    // The fastest node opens the first copy; the others make their own copies or join where worth a hop.
    expect(plan.pipelines[0]?.stages[0]?.nodeId).toBe('gpu');
    const nodes = plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId));
    expect(new Set(nodes).size).toBe(nodes.length);
  });

  it('plans exactly the asked copies when no node is left over for another', () => {
    const three: NodeProfile[] = [{ id: 'a', memoryGb: 12 }, { id: 'b', memoryGb: 12 }, { id: 'c', memoryGb: 12 }];
    expect(planSwarm(three, { models: [{ id: 'm', layers: 12, pipelines: 3 }] }).pipelines).toHaveLength(3);
    // Two nodes of 6 GB hold one copy of 12 layers between them, not two.
    const pair: NodeProfile[] = [{ id: 'a', memoryGb: 6 }, { id: 'b', memoryGb: 6 }];
    expect(planSwarm(pair, { models: [{ id: 'm', layers: 12 }] }).pipelines).toHaveLength(1);
  });

  it('plans exactly the asked copies with furtherCopies: false, and rejects a non-boolean', () => {
    const equal: NodeProfile[] = ['a', 'b', 'c', 'd'].map((id) => ({ id, memoryGb: 16, score: 2 }));
    expect(planSwarm(equal, { models: [{ id: 'm', layers: 16, pipelines: 2 }] }).pipelines).toHaveLength(4);
    expect(planSwarm(equal, { models: [{ id: 'm', layers: 16, pipelines: 2 }], furtherCopies: false }).pipelines).toHaveLength(2);
    const error = planError(() => planSwarm(equal, { models: [{ id: 'm', layers: 16 }], furtherCopies: 'yes' as unknown as boolean }));
    expect(error.code).toBe('InvalidInput');
    expect(error.message).toContain('furtherCopies');
  });

  it('keeps a copy short: a node joins only when it speeds the copy more than a copy of its own would', () => {
    // Four equal nodes that each hold the model: four one-stage copies, not one four-stage copy.
    const equal: NodeProfile[] = ['a', 'b', 'c', 'd'].map((id) => ({ id, memoryGb: 16, score: 2 }));
    const plan = planSwarm(equal, { models: [{ id: 'm', layers: 16 }] });
    expect(plan.pipelines.map((p) => p.stages.length)).toEqual([1, 1, 1, 1]);
    // A fast node short of memory takes a slow node with memory: the pair beats the slow node alone.
    const lopsided: NodeProfile[] = [{ id: 'fast', memoryGb: 8, score: 8 }, { id: 'big', memoryGb: 64, score: 1 }];
    const pairPlan = planSwarm(lopsided, { models: [{ id: 'm', layers: 16 }] });
    expect(pairPlan.pipelines).toHaveLength(1);
    expect(pairPlan.pipelines[0]?.stages.map((s) => s.nodeId)).toEqual(['fast', 'big']);
  });

  it('plans several models in one plan, counting each node memory across all of them', () => {
    const models: ModelSpec[] = [
      { id: 'base', layers: 6, layerGb: 2, pipelines: 1 },
      { id: 'coder', layers: 4, layerGb: 2, kind: 'expert' },
    ];
    // floor(10/2) = 5 layers per node, 10 in all: exactly 6 + 4.
    const two: NodeProfile[] = [{ id: 'a', memoryGb: 10 }, { id: 'b', memoryGb: 10 }];
    const plan = planSwarm(two, { models });
    expect(plan.models.map((m) => m.id)).toEqual(['base', 'coder']);
    expect(plan.pipelines.filter((p) => p.modelId === 'base')).toHaveLength(1);
    expect(plan.pipelines.filter((p) => p.modelId === 'coder')).toHaveLength(1);
    for (const gb of usedGb(plan).values()) expect(gb).toBeLessThanOrEqual(10);
    expect(validatePlan(plan, two)).toEqual([]);
  });

  it('counts capacity as floor(memoryGb / layerGb)', () => {
    // 9.9 GB holds 9 layers of 1 GB, not 10; 7 GB holds 3 layers of 2 GB.
    expect(planError(() => planSwarm([{ id: 'a', memoryGb: 9.9 }], { models: [{ id: 'm', layers: 10 }] })).code).toBe('InsufficientCapacity');
    expect(layersOn(planSwarm([{ id: 'a', memoryGb: 9.9 }], { models: [{ id: 'm', layers: 9 }] }), 'a')).toBe(9);
    expect(planError(() => planSwarm([{ id: 'a', memoryGb: 7 }], { models: [{ id: 'm', layers: 4, layerGb: 2 }] })).code).toBe('InsufficientCapacity');
    expect(layersOn(planSwarm([{ id: 'a', memoryGb: 7 }], { models: [{ id: 'm', layers: 3, layerGb: 2 }] }), 'a')).toBe(3);
  });

  it('fails with InsufficientCapacity naming the model and the shortfall, never a partial plan', () => {
    const two: NodeProfile[] = [{ id: 'a', memoryGb: 10 }, { id: 'b', memoryGb: 10 }];
    // base takes 6 of the 10 layers; coder needs 5 of the 4 left: short by 1.
    const error = planError(() =>
      planSwarm(two, { models: [{ id: 'base', layers: 6, layerGb: 2 }, { id: 'coder', layers: 5, layerGb: 2 }] }),
    );
    expect(error.code).toBe('InsufficientCapacity');
    expect(error.message).toContain('"coder"');
    expect(error.message).toMatch(/short by 1 layer/);
  });

  it('names the KV reserve in the shortfall: a layer takes layerGb + kvReserveGb', () => {
    // 10 GB holds 8 layers of 1 GB + 0.25 GB: short by 2 of 10.
    const error = planError(() => planSwarm([{ id: 'a', memoryGb: 10 }], { models: [{ id: 'm', layers: 10, kvReserveGb: 0.25 }] }));
    expect(error.code).toBe('InsufficientCapacity');
    expect(error.message).toContain('layers of 1 GB + 0.25 GB KV reserve');
    expect(error.message).toMatch(/short by 2 layers/);
    const nodes = planError(() => planSwarm([{ id: 'a', memoryGb: 100 }], { models: [{ id: 'm', layers: 10, pipelines: 2, kvReserveGb: 0.5 }] }));
    expect(nodes.message).toContain('a layer of 1 GB + 0.5 GB KV reserve');
  });

  it('fails with InsufficientCapacity when copies outnumber the nodes', () => {
    const error = planError(() => planSwarm([{ id: 'big', memoryGb: 100 }], { models: [{ id: 'm', layers: 10, pipelines: 2 }] }));
    expect(error.code).toBe('InsufficientCapacity');
    expect(error.message).toContain('"m"');
    // The shortfall is in nodes, not memory: 100 GB is plenty, one node cannot hold two disjoint copies.
    expect(error.message).toContain('short by 1 node');
  });

  it('is deterministic: the same profiles and config give the same plan', () => {
    const config: PlanConfig = { models: [{ id: 'base', layers: 16, pipelines: 2 }, { id: 'coder', layers: 4, kind: 'expert' }] };
    expect(planSwarm(six, config)).toEqual(planSwarm(six, config));
    expect(JSON.stringify(planSwarm(six, config))).toBe(JSON.stringify(planSwarm(six, config)));
  });

  it('does not keep a reference to the caller models', () => {
    const models: ModelSpec[] = [{ id: 'base', layers: 4 }];
    const plan = planSwarm(six, { models });
    expect(plan.models[0]).not.toBe(models[0]);
    expect(plan.models[0]).toEqual(models[0]);
  });

  it('gives a faster node more layers than a slower one with the same memory, in one copy', () => {
    const stages = splitLayers(
      [
        { id: 'fast', cap: 100, score: 4 },
        { id: 'slow', cap: 100, score: 1 },
      ],
      10,
    );
    // layers / score balanced: 8/4 = 2 against 2/1 = 2.
    expect(stages).toEqual([
      { nodeId: 'fast', layerStart: 0, layerEnd: 8 },
      { nodeId: 'slow', layerStart: 8, layerEnd: 10 },
    ]);
  });

  it('never gives a faster node fewer layers than a slower one with the same memory room', () => {
    const profileArb = fc.array(fc.record({ memoryGb: fc.integer({ min: 0, max: 12 }), score: fc.integer({ min: 1, max: 8 }) }), { minLength: 1, maxLength: 5 });
    let planned = 0;
    fc.assert(
      fc.property(profileArb, fc.integer({ min: 1, max: 16 }), (raw, layers) => {
        const profiles = raw.map((p, i) => ({ id: `n${i}`, ...p }));
        let plan: SwarmPlan;
        try {
          plan = planSwarm(profiles, { models: [{ id: 'm', layers }] });
        } catch (e) {
          if (e instanceof PlanError && e.code === 'InsufficientCapacity') return;
          throw e;
        }
        planned++;
        // Within one copy (across copies each node serves its own copy whole).
        for (const p of plan.pipelines) {
          for (const a of p.stages) {
            for (const b of p.stages) {
              const pa = profiles.find((x) => x.id === a.nodeId);
              const pb = profiles.find((x) => x.id === b.nodeId);
              if (pa !== undefined && pb !== undefined && pa.memoryGb === pb.memoryGb && pa.score > pb.score) {
                expect(a.layerEnd - a.layerStart).toBeGreaterThanOrEqual(b.layerEnd - b.layerStart);
              }
            }
          }
        }
      }),
      SEEDED,
    );
    expect(planned).toBeGreaterThan(SEEDED.numRuns / 4);
  });

  it("makes each copy's slowest stage (layers / score) as fast as any split of the layers over its nodes could (brute force)", () => {
    const profileArb = fc.array(fc.record({ memoryGb: fc.integer({ min: 0, max: 6 }), score: fc.integer({ min: 1, max: 6 }) }), { minLength: 1, maxLength: 4 });
    let planned = 0;
    fc.assert(
      fc.property(profileArb, fc.integer({ min: 1, max: 10 }), (raw, layers) => {
        const profiles = raw.map((p, i) => ({ id: `n${i}`, ...p }));
        const all = bestSlowestStage(profiles.map((p) => ({ cap: p.memoryGb, score: p.score })), layers);
        let plan: SwarmPlan;
        try {
          plan = planSwarm(profiles, { models: [{ id: 'm', layers }] });
        } catch (e) {
          if (e instanceof PlanError && e.code === 'InsufficientCapacity') {
            expect(all).toBe(Infinity);
            return;
          }
          throw e;
        }
        planned++;
        for (const p of plan.pipelines) {
          const mine = profiles.filter((x) => p.stages.some((s) => s.nodeId === x.id));
          const best = bestSlowestStage(mine.map((x) => ({ cap: x.memoryGb, score: x.score })), layers);
          const slowest = Math.max(...p.stages.map((s) => (s.layerEnd - s.layerStart) / (profiles.find((x) => x.id === s.nodeId)?.score ?? 1)));
          expect(slowest).toBeCloseTo(best, 9);
        }
      }),
      SEEDED,
    );
    expect(planned).toBeGreaterThan(SEEDED.numRuns / 4);
  });
});

/** The smallest possible max(layers_i / score_i) over every split of `layers` within capacities. */
function bestSlowestStage(nodes: readonly { cap: number; score: number }[], layers: number): number {
  let best = Infinity;
  const counts = new Array<number>(nodes.length).fill(0);
  const go = (i: number, left: number): void => {
    if (i === nodes.length) {
      if (left !== 0) return;
      const slowest = Math.max(...counts.map((n, j) => (n === 0 ? 0 : n / (nodes[j]?.score ?? 1))));
      best = Math.min(best, slowest);
      return;
    }
    const node = nodes[i] as { cap: number; score: number };
    for (let n = 0; n <= Math.min(node.cap, left); n++) {
      counts[i] = n;
      go(i + 1, left - n);
    }
    counts[i] = 0;
  };
  go(0, layers);
  return best;
}
