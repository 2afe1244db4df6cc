/**
 * `ModelSpec.stageFactor`: a bound on a copy's stages by its own memory's (docs/cost.md "A stage
 * bound"), in planSwarm (wanted copies, further copies, spares that join) and in growth; on
 * several models it reads each node's full memory.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanError, planSwarm, SwarmState } from '../../src/index.js';
import { withinFactor } from '../../src/core/plan-short.js';
import { planGrowth } from '../../src/core/telomerase.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../../src/index.js';
import { SEEDED, thrown } from './fixtures.js';

/**
 * Each copy of `model` against the fewest of its own nodes, largest first, that hold the model:
 * on one model in the memory the plan leaves them for it (the layers they hold in the copy plus
 * their free memory), on several models in each node's full memory.
 */
function stageRatios(plan: SwarmPlan, profiles: readonly NodeProfile[], model: ModelSpec): { id: string; stages: number; memory: number; left: number }[] {
  const fullGb = new Map(profiles.map((p) => [p.id, p.memoryGb] as const));
  const free = new Map(fullGb);
  const gb = new Map(plan.models.map((m) => [m.id, m.layerGb ?? 1] as const));
  for (const p of plan.pipelines) for (const s of p.stages) free.set(s.nodeId, (free.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * (gb.get(p.modelId) ?? 1));
  return plan.pipelines
    .filter((p) => p.modelId === model.id)
    .map((p) => {
      const room = p.stages
        .map((s) => Math.min(model.layers, plan.models.length > 1 ? Math.floor((fullGb.get(s.nodeId) ?? 0) / (model.layerGb ?? 1) + 1e-9) : s.layerEnd - s.layerStart + Math.floor((free.get(s.nodeId) ?? 0) / (model.layerGb ?? 1) + 1e-9)))
        .sort((a, b) => b - a);
      const left = p.stages
        .map((s) => Math.min(model.layers, s.layerEnd - s.layerStart + Math.floor((free.get(s.nodeId) ?? 0) / (model.layerGb ?? 1) + 1e-9)))
        .sort((a, b) => b - a);
      return { id: p.id, stages: p.stages.length, memory: fewest(room, model.layers), left: fewest(left, model.layers) };
    });
}

/** The fewest of `room` (largest first) that hold `layers`. */
function fewest(room: readonly number[], layers: number): number {
  let held = 0;
  let k = 0;
  while (held < layers) held += room[k++] ?? Number.POSITIVE_INFINITY;
  return k;
}

/** One large slow node that holds the model alone, and small fast ones: speed asks for long copies. */
const homeLab: NodeProfile[] = [
  { id: 'mac', memoryGb: 64, score: 1 },
  { id: 'gpu-a', memoryGb: 8, score: 6 },
  { id: 'gpu-b', memoryGb: 8, score: 6 },
  { id: 'gpu-c', memoryGb: 8, score: 5 },
  { id: 'gpu-d', memoryGb: 6, score: 5 },
];
const model: ModelSpec = { id: 'base', layers: 32 };

describe('stageFactor', () => {
  it('keeps a copy to the bound where the hop rule alone makes it long', () => {
    const free = planSwarm(homeLab, { models: [model] });
    expect(Math.max(...stageRatios(free, homeLab, model).map((r) => r.stages / r.memory))).toBeGreaterThan(2);
    const bounded = planSwarm(homeLab, { models: [{ ...model, stageFactor: 2 }] });
    const ratios = stageRatios(bounded, homeLab, model);
    expect(ratios.every((r) => r.stages <= 2 * r.memory)).toBe(true);
    // Memory still decides: a factor of 1 gives copies exactly as long as memory forces.
    const tight = planSwarm(homeLab, { models: [{ ...model, stageFactor: 1 }] });
    expect(stageRatios(tight, homeLab, model).every((r) => r.stages === r.memory)).toBe(true);
  });

  it('holds for every copy planned, further copies and joined spares included, on random swarms', () => {
    const swarmArb = fc.array(fc.record({ memoryGb: fc.integer({ min: 1, max: 40 }), score: fc.integer({ min: 1, max: 12 }) }), { minLength: 1, maxLength: 12 });
    let planned = 0;
    let bounded = 0;
    fc.assert(
      fc.property(swarmArb, fc.integer({ min: 4, max: 48 }), fc.constantFrom(1, 1.5, 2, 3), (raw, layers, factor) => {
        const profiles = raw.map((p, i) => ({ id: `n${i}`, ...p }));
        const spec: ModelSpec = { id: 'm', layers, stageFactor: factor };
        let plan: SwarmPlan;
        try {
          plan = planSwarm(profiles, { models: [spec] });
        } catch (e) {
          if (e instanceof PlanError && e.code === 'InsufficientCapacity') return;
          throw e;
        }
        planned++;
        for (const r of stageRatios(plan, profiles, spec)) expect(r.stages, `${r.id}: ${r.stages} stages, memory ${r.memory}, factor ${factor}`).toBeLessThanOrEqual(factor * r.memory);
        if (stageRatios(planSwarm(profiles, { models: [{ id: 'm', layers }] }), profiles, spec).some((r) => r.stages > factor * r.memory)) bounded++;
      }),
      SEEDED,
    );
    expect(planned).toBeGreaterThan(SEEDED.numRuns / 2);
    // Not vacuous: without the bound, some of these plans break it.
    expect(bounded).toBeGreaterThan(SEEDED.numRuns / 20);
  });

  it('holds for every bounded model of a multi-model swarm, several wanted copies each', () => {
    const modelArb = fc.record({ layers: fc.integer({ min: 2, max: 32 }), layerGb: fc.constantFrom(0.5, 1, 2), pipelines: fc.integer({ min: 1, max: 4 }), stageFactor: fc.constantFrom(undefined, 1, 1.5, 2, 3) });
    const nodeArb = fc.record({ memoryGb: fc.integer({ min: 1, max: 40 }), score: fc.integer({ min: 1, max: 12 }) });
    let planned = 0;
    let disjoint = 0;
    let copies = 0;
    let within = 0;
    fc.assert(
      fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 14 }), fc.array(modelArb, { minLength: 1, maxLength: 3 }), (raw, specs) => {
        const profiles = raw.map((p, i) => ({ id: `n${i}`, ...p }));
        const models: ModelSpec[] = specs.map(({ stageFactor, ...m }, i) => ({ id: `m${i}`, ...m, ...(stageFactor === undefined ? {} : { stageFactor }) }));
        let plan: SwarmPlan;
        try {
          plan = planSwarm(profiles, { models });
        } catch (e) {
          if (e instanceof PlanError && e.code === 'InsufficientCapacity') return;
          throw e;
        }
        planned++;
        const nodesUsed = plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId));
        if (new Set(nodesUsed).size === nodesUsed.length) disjoint++;
        for (const m of models) {
          if (m.stageFactor === undefined) continue;
          for (const r of stageRatios(plan, profiles, m)) {
            copies++;
            // Within the bound on its nodes' full memory; only where memory is so tight that models
            // share nodes may a copy exceed it, and then it is no longer than the memory left to it forces.
            if (r.stages <= m.stageFactor * r.memory) within++;
            else expect(r.stages, `${r.id}: ${r.stages} stages, full memory ${r.memory}, memory left ${r.left}`).toBeLessThanOrEqual(r.left);
            expect(r.stages, `${r.id}: ${r.stages} stages, memory left ${r.left}, factor ${m.stageFactor}`).toBeLessThanOrEqual(m.stageFactor * r.left);
          }
        }
      }),
      { ...SEEDED, numRuns: 600 },
    );
    expect(planned).toBeGreaterThan(100);
    expect(within).toBeGreaterThan(0.95 * copies);
    // Most of these multi-model plans are disjoint: there the room read is each node's full memory.
    expect(disjoint).toBeGreaterThan(planned / 2);
  });

  it('reads full memory on several models: a copy on memory other models leave is trimmed to its nodes\' full memory', () => {
    // Six nodes with room for 4 of 16 layers each, whose full memory holds the model alone.
    const group = Array.from({ length: 6 }, (_, i) => ({ id: `n${i}`, score: 6 - i, cap: 4 }));
    expect(withinFactor(group, 16, 2)).toHaveLength(6);
    expect(withinFactor(group.map((c) => ({ ...c, full: 16 })), 16, 2).map((c) => c.id)).toEqual(['n0', 'n1', 'n2', 'n3']);
  });

  it('trims the copies of the fallbacks too (the greedy short copies stranded memory)', () => {
    // Bounded and unbounded short copies both place 3 of the 4 copies: the balanced partition plans them.
    const profiles: NodeProfile[] = [[4, 11], [19, 6], [14, 6], [6, 7], [9, 7], [37, 9], [9, 3], [10, 10]].map(([memoryGb, score], i) => ({ id: `n${i}`, memoryGb: memoryGb as number, score: score as number }));
    const spec: ModelSpec = { id: 'm0', layers: 11, pipelines: 4, stageFactor: 3 };
    const plan = planSwarm(profiles, { models: [spec] });
    expect(plan.pipelines.length).toBeGreaterThanOrEqual(4);
    for (const r of stageRatios(plan, profiles, spec)) expect(r.stages).toBeLessThanOrEqual(3 * r.memory);
  });

  it("keeps every model's copies to their bound when a spare joins one model's copy (the bound reads full memory, which a re-split does not free)", () => {
    const profiles: NodeProfile[] = [[32, 10], [1, 2], [36, 11], [8, 6], [22, 6], [4, 12], [33, 5], [25, 2], [3, 12]].map(([memoryGb, score], i) => ({ id: `n${i}`, memoryGb: memoryGb as number, score: score as number }));
    const models: ModelSpec[] = [
      { id: 'm0', layers: 31, layerGb: 2, stageFactor: 1.5 },
      { id: 'm1', layers: 9, stageFactor: 1.5 },
      { id: 'm2', layers: 15, pipelines: 2, stageFactor: 1.5 },
    ];
    const plan = planSwarm(profiles, { models });
    for (const m of models) for (const r of stageRatios(plan, profiles, m)) expect(r.stages, r.id).toBeLessThanOrEqual(1.5 * r.memory);
  });

  it('does not restore a broken copy past the bound: a newcomer that could hold more of it takes a copy of its own', () => {
    const bounded: ModelSpec = { ...model, stageFactor: 1 };
    const pair: NodeProfile[] = [
      { id: 'a', memoryGb: 16, score: 4 },
      { id: 'b', memoryGb: 16, score: 4 },
    ];
    const plan = planSwarm(pair, { models: [bounded] });
    expect(plan.pipelines.map((p) => p.stages.map((s) => s.nodeId))).toEqual([['a', 'b']]);
    const big: NodeProfile = { id: 'big', memoryGb: 64, score: 4 };
    const profiles = [...pair, big];
    const nodes = { ...SwarmState.fromProfiles(plan, profiles).nodes, b: { alive: false, samples: 0 } };
    const grown = planGrowth(plan, profiles, nodes, big, new Map([['base', 1]]), () => 'x');
    expect(grown.role).toBe('copy');
    expect(grown.plan.pipelines.at(-1)?.stages.map((s) => s.nodeId)).toEqual(['big']);
    for (const r of stageRatios(grown.plan, profiles, bounded)) expect(r.stages).toBeLessThanOrEqual(r.memory);
    // Without the bound the newcomer takes the dead node's stage.
    const free = planSwarm(pair, { models: [model] });
    const freely = planGrowth(free, profiles, nodes, big, new Map([['base', 1]]), () => 'y');
    expect(freely.plan.pipelines.find((p) => p.id === 'base/y')?.stages.map((s) => s.nodeId)).toEqual(['a', 'big']);
  });

  it('bounds the copy growth builds for a newcomer', () => {
    const bounded: ModelSpec = { ...model, stageFactor: 1 };
    const plan = planSwarm(homeLab.slice(0, 1), { models: [bounded] }); // the mac alone
    const newcomers: NodeProfile[] = [
      { id: 'big', memoryGb: 32, score: 8 },
      { id: 'fast', memoryGb: 8, score: 9 },
    ];
    const profiles = [...homeLab.slice(0, 1), ...newcomers];
    // The base model has its copy: the newcomer 'big' forms a further copy from the idle nodes.
    const nodes = SwarmState.fromProfiles(plan, profiles).nodes;
    let next = 0;
    const grown = planGrowth(plan, profiles, nodes, newcomers[0] as NodeProfile, new Map([['base', 1]]), () => String(++next));
    expect(grown.role).toBe('copy');
    const ratios = stageRatios(grown.plan, profiles, bounded);
    expect(ratios.every((r) => r.stages <= r.memory)).toBe(true);
    // Without the bound the fast small node joins the newcomer's copy.
    const free = planSwarm(homeLab.slice(0, 1), { models: [model] });
    const freely = planGrowth(free, profiles, SwarmState.fromProfiles(free, profiles).nodes, newcomers[0] as NodeProfile, new Map([['base', 1]]), () => String(++next));
    expect(freely.plan.pipelines.at(-1)?.stages.map((s) => s.nodeId).sort()).toEqual(['big', 'fast']);
  });

  it('refuses a bad bound, naming the model and the field', () => {
    for (const bad of [0, 0.5, -1, Number.NaN, Number.POSITIVE_INFINITY, '2', null]) {
      const error = thrown(() => planSwarm(homeLab, { models: [{ ...model, stageFactor: bad as number }] }), PlanError);
      expect(error.code).toBe('InvalidInput');
      expect(error.message).toContain('model "base": "stageFactor" must be a finite number from 1');
    }
  });
});
