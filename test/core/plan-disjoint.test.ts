/**
 * planSwarm on several models (docs/cost.md "Several models: disjoint copies"): each node in one
 * copy, copies as long as their own full memory needs, throughput counted once near the bound,
 * every model its wanted copies, and a KV reserve left free.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanError, planSwarm, validatePlan } from '../../src/index.js';
import { disjointCopies, fullCapacity } from '../../src/core/plan-disjoint.js';
import { sharedThroughput } from '../../src/core/shared-throughput.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../../src/index.js';
import { SEEDED, thrown } from './fixtures.js';

/** Each copy's stages over the fewest of its own nodes, largest first, whose full memory holds the model. */
function fullMemoryRatios(plan: SwarmPlan, profiles: readonly NodeProfile[]): number[] {
  const memory = new Map(profiles.map((p) => [p.id, p.memoryGb] as const));
  const models = new Map(plan.models.map((m) => [m.id, m] as const));
  return plan.pipelines.map((p) => {
    const model = models.get(p.modelId) as ModelSpec;
    const caps = p.stages.map((s) => fullCapacity(memory.get(s.nodeId) ?? 0, model)).sort((a, b) => b - a);
    let held = 0;
    let need = 0;
    while (held < model.layers) held += caps[need++] ?? Number.POSITIVE_INFINITY;
    return p.stages.length / need;
  });
}

const swarmArb = fc
  .record({
    count: fc.integer({ min: 300, max: 1000 }),
    seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    models: fc.array(fc.record({ layers: fc.integer({ min: 16, max: 96 }), layerGb: fc.constantFrom(0.125, 0.25, 0.5, 1), pipelines: fc.integer({ min: 1, max: 8 }) }), { minLength: 2, maxLength: 4 }),
    share: fc.double({ min: 0.05, max: 0.5, noNaN: true }),
  })
  .map(({ count, seed, models, share }) => {
    let x = seed >>> 0;
    const next = () => {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      return x / 2 ** 32;
    };
    // Memory 4-24 GB and speed 1-9, drawn independently.
    const nodes: NodeProfile[] = Array.from({ length: count }, (_, i) => ({ id: `n${i}`, memoryGb: Math.round(4 + 20 * next()), score: Math.round((1 + 8 * next()) * 100) / 100 }));
    const total = nodes.reduce((s, n) => s + n.memoryGb, 0);
    // Wanted copies scaled so that they need `share` of the memory (at most half: memory is at least twice what they need).
    const need = models.reduce((s, m) => s + m.pipelines * m.layers * m.layerGb, 0);
    const scale = Math.max(1, Math.floor((share * total) / need));
    const specs: ModelSpec[] = models.map((m, i) => ({ id: `m${i}`, ...m, pipelines: Math.min(1000, m.pipelines * scale) }));
    return { nodes, models: specs };
  });

describe('planSwarm on several models', () => {
  it('reaches 0.9 of the compute bound counted once, with copies within 2x their own full memory, on 300-1,000 heterogeneous nodes', () => {
    fc.assert(
      fc.property(swarmArb, ({ nodes, models }) => {
        const plan = planSwarm(nodes, { models });
        expect(validatePlan(plan, nodes)).toEqual([]);
        const once = sharedThroughput(plan, nodes);
        expect(once.layerRate).toBeGreaterThanOrEqual(0.9 * once.bound);
        expect(Math.max(...fullMemoryRatios(plan, nodes))).toBeLessThanOrEqual(2);
        // Every model has its wanted copies, and no node serves two copies unless the wanted copies
        // do not fit on disjoint nodes (then whole copies are packed, plan-packed.ts).
        for (const m of models) expect(plan.pipelines.filter((p) => p.modelId === m.id).length).toBeGreaterThanOrEqual(m.pipelines ?? 1);
        if (disjointCopies(nodes, models, models, false) === undefined) return;
        const seen = new Set<string>();
        for (const p of plan.pipelines) for (const s of p.stages) {
          expect(seen.has(s.nodeId), s.nodeId).toBe(false);
          seen.add(s.nodeId);
        }
      }),
      { ...SEEDED, numRuns: 100 },
    );
  });

  it('is deterministic: same input, same plan bytes', () => {
    const [{ nodes, models }] = fc.sample(swarmArb, { seed: 7, numRuns: 1 }) as [{ nodes: NodeProfile[]; models: ModelSpec[] }];
    expect(JSON.stringify(planSwarm(nodes, { models }))).toBe(JSON.stringify(planSwarm(nodes.map((n) => ({ ...n })), { models: models.map((m) => ({ ...m })) })));
  });

  it('plans exactly the wanted copies with furtherCopies: false, the rest spare', () => {
    const nodes: NodeProfile[] = Array.from({ length: 12 }, (_, i) => ({ id: `n${i}`, memoryGb: 8 + i, score: 1 + (i % 4) }));
    const models: ModelSpec[] = [{ id: 'base', layers: 16, pipelines: 2 }, { id: 'code', layers: 8 }];
    const plan = planSwarm(nodes, { models, furtherCopies: false });
    expect(plan.pipelines.map((p) => p.id)).toEqual(['base/0', 'base/1', 'code/0']);
  });

  it('shares nodes only where disjoint copies cannot hold the wanted copies (memory-tight)', () => {
    // One node holds every model; disjoint nodes cannot hold three copies.
    const nodes: NodeProfile[] = [{ id: 'big', memoryGb: 30, score: 4 }, { id: 'small', memoryGb: 6, score: 2 }];
    const models: ModelSpec[] = [{ id: 'a', layers: 12 }, { id: 'b', layers: 10 }, { id: 'c', layers: 6 }];
    const plan = planSwarm(nodes, { models });
    expect(validatePlan(plan, nodes)).toEqual([]);
    expect(plan.pipelines.length).toBeGreaterThanOrEqual(3);
    expect(new Set(plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId))).size).toBeLessThan(plan.pipelines.length + 1);
  });

  it('leaves each layer its KV reserve free, in the planner and in the plan check', () => {
    const nodes: NodeProfile[] = [{ id: 'a', memoryGb: 16, score: 2 }, { id: 'b', memoryGb: 16, score: 2 }, { id: 'c', memoryGb: 12, score: 1 }];
    const models: ModelSpec[] = [{ id: 'base', layers: 16, layerGb: 0.5, kvReserveGb: 0.5 }, { id: 'small', layers: 8, layerGb: 0.5, kvReserveGb: 1 }];
    for (const furtherCopies of [true, false]) {
      const plan = planSwarm(nodes, { models, furtherCopies });
      expect(validatePlan(plan, nodes)).toEqual([]);
      const used = new Map<string, number>();
      for (const p of plan.pipelines) {
        const m = models.find((x) => x.id === p.modelId) as ModelSpec;
        for (const s of p.stages) used.set(s.nodeId, (used.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * ((m.layerGb ?? 1) + (m.kvReserveGb ?? 0)));
      }
      for (const n of nodes) expect(used.get(n.id) ?? 0).toBeLessThanOrEqual(n.memoryGb);
    }
    // A plan that fills the reserve is refused.
    const full: SwarmPlan = { models: [{ id: 'm', layers: 16, layerGb: 0.5, kvReserveGb: 0.5 }], pipelines: [{ id: 'm/0', modelId: 'm', stages: [{ nodeId: 'c', layerStart: 0, layerEnd: 16 }] }] };
    expect(validatePlan(full, nodes).map((i) => i.code)).toEqual(['OverCapacity']);
    // The single-model planner reads the reserve the same way.
    const single = planSwarm(nodes, { models: [{ id: 'm', layers: 16, layerGb: 0.5, kvReserveGb: 0.5 }] });
    expect(validatePlan(single, nodes)).toEqual([]);
    expect(single.pipelines.every((p) => p.stages.every((s) => s.nodeId !== 'c' || s.layerEnd - s.layerStart <= 12))).toBe(true);
  });

  it('refuses a bad KV reserve, naming the model and the field', () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, '1', null]) {
      const error = thrown(() => planSwarm([{ id: 'a', memoryGb: 8 }], { models: [{ id: 'base', layers: 4, kvReserveGb: bad as number }] }), PlanError);
      expect(error.code).toBe('InvalidInput');
      expect(error.message).toContain('model "base": "kvReserveGb" must be a finite number from 0');
    }
  });
});
