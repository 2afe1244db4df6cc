/**
 * The rebalancer's decision (docs/rebalance.md "The rule"): moves that raise counted-once
 * throughput by at least the hysteresis, priced by their loads, a fixed point after one rebalance.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanError, SwarmError, validatePlan } from '../../src/index.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../../src/index.js';
import { churnedSwarm } from '../../bench/churn.js';
import { sharedThroughput } from '../../src/core/shared-throughput.js';
import { proposeMoves, type RebalanceMove } from '../../src/rebalance/propose-moves.js';
import { planLayersMoved } from '../../src/rebalance/plan-layers-moved.js';
import { REBALANCE_DEFAULTS } from '../../src/rebalance/rebalance-options.js';

/** A small churned swarm (bench/churn.ts): `n` drawn nodes, `events` retirements or arrivals through the real Swarm. */
function churned(seed: number, models: readonly ModelSpec[], n = 16, events = 24): { plan: SwarmPlan; profiles: NodeProfile[] } {
  const c = churnedSwarm(seed, models, n, events);
  const plan = c.swarm.state().plan;
  c.swarm.stop();
  return { plan, profiles: [...c.profiles] };
}

/** The plan after one move. */
function apply(plan: SwarmPlan, m: RebalanceMove): SwarmPlan {
  return { models: plan.models, pipelines: [...plan.pipelines.filter((p) => !m.removes.includes(p.id)), ...m.adds] };
}

const ONE: readonly ModelSpec[] = [{ id: 'base', layers: 32 }];
const THREE: readonly ModelSpec[] = [{ id: 'base', layers: 32, pipelines: 2 }, { id: 'code', layers: 16 }, { id: 'math', layers: 16 }];

describe('proposeMoves', () => {
  it('re-forms a copy whose fast node is short of memory with an idle fast node', () => {
    // fast holds 8 layers, slow the other 24: the copy runs at 1/24. An idle fast node with room makes it 2 × faster or more.
    const profiles: NodeProfile[] = [{ id: 'fast', memoryGb: 8, score: 8 }, { id: 'slow', memoryGb: 32, score: 1 }, { id: 'idle', memoryGb: 32, score: 8 }];
    const plan: SwarmPlan = { models: [{ id: 'm', layers: 32 }], pipelines: [{ id: 'm/0', modelId: 'm', stages: [{ nodeId: 'fast', layerStart: 0, layerEnd: 8 }, { nodeId: 'slow', layerStart: 8, layerEnd: 32 }] }] };
    const r = proposeMoves(plan, profiles);
    expect(r.moves.length).toBeGreaterThan(0);
    expect(r.after).toBeGreaterThan(2 * r.before);
    expect(validatePlan(r.plan, profiles)).toEqual([]);
    const loaded = r.moves.flatMap((m) => m.loads.map((l) => l.nodeId));
    expect(loaded).toContain('idle');
    // Priced at the default 1 GB/s: a layer of 1 GB takes a second.
    for (const m of r.moves) for (const l of m.loads) expect(l.seconds).toBeCloseTo(l.gb / REBALANCE_DEFAULTS.loadGbPerSecond);
  });

  it('prices loads by the bandwidth a profile declares, and refuses a bad one', () => {
    const profiles: NodeProfile[] = [{ id: 'fast', memoryGb: 8, score: 8 }, { id: 'slow', memoryGb: 32, score: 1 }, { id: 'idle', memoryGb: 32, score: 8, loadGbPerSecond: 4 }];
    const plan: SwarmPlan = { models: [{ id: 'm', layers: 32, layerGb: 0.5 }], pipelines: [{ id: 'm/0', modelId: 'm', stages: [{ nodeId: 'fast', layerStart: 0, layerEnd: 16 }, { nodeId: 'slow', layerStart: 16, layerEnd: 32 }] }] };
    const loads = proposeMoves(plan, profiles).moves.flatMap((m) => m.loads).filter((l) => l.nodeId === 'idle');
    expect(loads.length).toBeGreaterThan(0);
    for (const l of loads) expect(l.seconds).toBeCloseTo(((l.layerEnd - l.layerStart) * 0.5) / 4);
    expect(() => proposeMoves(plan, [...profiles.slice(0, 2), { id: 'idle', memoryGb: 32, loadGbPerSecond: 0 }])).toThrow(PlanError);
  });

  it('moves nothing when no move gains its hysteresis, and never loads onto a dead node', () => {
    const { plan, profiles } = churned(7, ONE);
    const strict = proposeMoves(plan, profiles, undefined, { minGain: 1 });
    for (const m of strict.moves) expect(m.gain).toBeGreaterThanOrEqual(m.replaced);
    const dead = profiles.filter((_, i) => i % 3 === 0).map((p) => p.id);
    const nodes = Object.fromEntries(profiles.map((p) => [p.id, { alive: !dead.includes(p.id), samples: 0 }]));
    const r = proposeMoves(plan, profiles, nodes);
    for (const m of r.moves) {
      for (const p of m.adds) for (const s of p.stages) expect(dead).not.toContain(s.nodeId);
      for (const id of m.removes) for (const s of plan.pipelines.find((p) => p.id === id)?.stages ?? []) expect(dead).not.toContain(s.nodeId);
    }
  });

  it('refuses bad options by name and changes nothing', () => {
    const { plan, profiles } = churned(3, ONE);
    expect(() => proposeMoves(plan, profiles, undefined, { minGain: 0 })).toThrow(/minGain/);
    expect(() => proposeMoves(plan, profiles, undefined, { maxRounds: 1.5 })).toThrow(/maxRounds/);
    expect(() => proposeMoves(plan, profiles, undefined, { typo: 1 } as never)).toThrow(SwarmError);
    expect(() => proposeMoves(plan, profiles, undefined, undefined, 'ids' as never)).toThrow(/ids/);
  });

  it('on random churned swarms: every move raises counted-once throughput by its hysteresis, the plan validates, a second rebalance moves nothing', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.boolean(), fc.constantFrom(0.01, 0.05, 0.2), (seed, several, minGain) => {
        const { plan, profiles } = churned(seed, several ? THREE : ONE);
        const r = proposeMoves(plan, profiles, undefined, { minGain });
        let current = plan;
        let rate = sharedThroughput(plan, profiles).layerRate;
        for (const m of r.moves) {
          current = apply(current, m);
          const next = sharedThroughput(current, profiles).layerRate;
          expect(next - rate).toBeGreaterThan(0);
          expect(next - rate).toBeGreaterThanOrEqual(minGain * m.replaced - 1e-9 * Math.max(1, rate));
          expect(m.layersMoved).toBe(m.loads.reduce((n, l) => n + l.layerEnd - l.layerStart, 0));
          rate = next;
        }
        expect(validatePlan(r.plan, profiles)).toEqual([]);
        expect(r.after).toBeCloseTo(rate, 9);
        expect(r.after).toBeGreaterThanOrEqual(r.before);
        expect(r.layersMoved).toBeGreaterThanOrEqual(r.moves.length === 0 ? 0 : 1);
        expect(planLayersMoved(plan, r.plan)).toBeLessThanOrEqual(r.layersMoved);
        expect(proposeMoves(r.plan, profiles, undefined, { minGain }).moves).toEqual([]);
      }),
      { numRuns: 12, seed: 39 },
    );
  });

  it('is deterministic: the same plan, profiles and options give the same moves', () => {
    const { plan, profiles } = churned(11, THREE);
    expect(JSON.stringify(proposeMoves(plan, profiles))).toBe(JSON.stringify(proposeMoves(plan, profiles)));
  });
});

describe('planLayersMoved', () => {
  it('counts the layers a node holds after and did not before, per model', () => {
    const before: SwarmPlan = { models: [{ id: 'm', layers: 10 }], pipelines: [{ id: 'm/0', modelId: 'm', stages: [{ nodeId: 'a', layerStart: 0, layerEnd: 6 }, { nodeId: 'b', layerStart: 6, layerEnd: 10 }] }] };
    const after: SwarmPlan = { models: [{ id: 'm', layers: 10 }], pipelines: [{ id: 'm/1', modelId: 'm', stages: [{ nodeId: 'a', layerStart: 0, layerEnd: 4 }, { nodeId: 'b', layerStart: 4, layerEnd: 10 }] }] };
    expect(planLayersMoved(before, after)).toBe(2);
    expect(planLayersMoved(before, before)).toBe(0);
  });
});
