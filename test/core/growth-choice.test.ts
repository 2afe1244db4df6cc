/**
 * Growth and retirement priced by counted-once throughput (docs/cost.md "Growth and retirement,
 * counted once"): the newcomer's model, the retiring range's new holder, and the layers moved.
 */
import { describe, expect, it } from 'vitest';
import { planSwarm, SwarmState } from '../../src/index.js';
import { PLAN_LIMITS } from '../../src/core/validate.js';
import { planGrowth, planRetirement } from '../../src/core/telomerase.js';
import { layersMoved } from '../../src/core/growth-choice.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../../src/index.js';
import { pipe, st } from './fixtures.js';

const ids = () => {
  let n = 0;
  return () => `g${++n}`;
};

describe('growth, counted once', () => {
  it('builds the copy where counted-once throughput gains most, not the base model first', () => {
    const models: ModelSpec[] = [{ id: 'base', layers: 16 }, { id: 'coder', layers: 4, kind: 'expert' }];
    const plan: SwarmPlan = { models, pipelines: [pipe('base/0', 'base', st('a', 0, 16)), pipe('coder/0', 'coder', st('b', 0, 4))] };
    const idle: NodeProfile = { id: 'idle', memoryGb: 12, score: 1 };
    const fast: NodeProfile = { id: 'fast', memoryGb: 4, score: 8 };
    const profiles: NodeProfile[] = [{ id: 'a', memoryGb: 16, score: 4 }, { id: 'b', memoryGb: 4, score: 2 }, idle, fast];
    const nodes = SwarmState.fromProfiles(plan, profiles).nodes;
    // A base copy would be fast + idle, 12 layers on the slow node (16/12 layer-passes); the
    // coder's copy on the fast node alone runs 8.
    const grown = planGrowth(plan, profiles, nodes, fast, new Map([['base', 1], ['coder', 1]]), ids());
    expect(grown.role).toBe('expert');
    expect(grown.modelId).toBe('coder');
    expect(grown.plan.pipelines.at(-1)?.stages).toEqual([st('fast', 0, 4)]);
    expect(grown.layersMoved).toBe(4);
  });

  it("on several models, builds the newcomer's copy from nodes that serve no copy", () => {
    const profiles: NodeProfile[] = Array.from({ length: 8 }, (_, i) => ({ id: `n${i}`, memoryGb: 6 + i, score: 1 + (i % 3) }));
    const models: ModelSpec[] = [{ id: 'base', layers: 24, layerGb: 0.5, pipelines: 2 }, { id: 'coder', layers: 8, kind: 'expert', pipelines: 2 }];
    const plan = planSwarm(profiles, { models, furtherCopies: false });
    const busy = new Set(plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
    const newcomer: NodeProfile = { id: 'new', memoryGb: 8, score: 2 };
    const all = [...profiles, newcomer];
    const grown = planGrowth(plan, all, SwarmState.fromProfiles(plan, all).nodes, newcomer, new Map([['base', 2], ['coder', 2]]), ids());
    const added = grown.plan.pipelines.filter((p) => grown.pipelines.includes(p.id));
    expect(added.length).toBe(1);
    for (const s of added[0]?.stages ?? []) expect(busy.has(s.nodeId), s.nodeId).toBe(false);
    expect(grown.layersMoved).toBeLessThanOrEqual(Math.max(...models.map((m) => m.layers)));
  });

  it('reports the layers a restore moves: the dead stages', () => {
    const models: ModelSpec[] = [{ id: 'base', layers: 8 }];
    const plan: SwarmPlan = { models, pipelines: [pipe('base/0', 'base', st('a', 0, 5), st('b', 5, 8))] };
    const c: NodeProfile = { id: 'c', memoryGb: 4, score: 1 };
    const profiles: NodeProfile[] = [{ id: 'a', memoryGb: 5 }, { id: 'b', memoryGb: 3 }, c];
    const nodes = { ...SwarmState.fromProfiles(plan, profiles).nodes, b: { alive: false, samples: 0 } };
    const grown = planGrowth(plan, profiles, nodes, c, new Map([['base', 1]]), ids());
    expect(grown.role).toBe('restore');
    expect(grown.layersMoved).toBe(3);
  });
});

describe('retirement, counted once', () => {
  it("moves a retiring range where the plan loses least: an idle node over a faster one that serves another model", () => {
    const models: ModelSpec[] = [{ id: 'a', layers: 8 }, { id: 'b', layers: 8, kind: 'expert' }];
    const plan: SwarmPlan = { models, pipelines: [pipe('a/0', 'a', st('x', 0, 4), st('y', 4, 8)), pipe('b/0', 'b', st('busy', 0, 8))] };
    const profiles: NodeProfile[] = [
      { id: 'x', memoryGb: 4, score: 2 },
      { id: 'y', memoryGb: 4, score: 2 },
      { id: 'busy', memoryGb: 16, score: 4 },
      { id: 'idle', memoryGb: 8, score: 3 },
    ];
    const decision = planRetirement(plan, profiles, SwarmState.fromProfiles(plan, profiles).nodes, 'y');
    // On busy, a's copy and b's would share its speed: 16/3 layer-passes in all; on idle, 8.
    expect(decision.relocated).toEqual([{ pipelineId: 'a/0', layerStart: 4, layerEnd: 8, from: 'y', to: 'idle' }]);
    expect(decision.layersMoved).toBe(4);
  });

  it('moves exactly the layers the retiring node held', () => {
    const profiles: NodeProfile[] = Array.from({ length: 10 }, (_, i) => ({ id: `n${i}`, memoryGb: 4 + 2 * i, score: 1 + (i % 4) }));
    const models: ModelSpec[] = [{ id: 'base', layers: 20, pipelines: 2 }, { id: 'coder', layers: 6, kind: 'expert' }];
    const plan = planSwarm(profiles, { models, furtherCopies: false });
    const nodes = SwarmState.fromProfiles(plan, profiles).nodes;
    for (const p of profiles) {
      const held = plan.pipelines.flatMap((q) => q.stages).filter((s) => s.nodeId === p.id).reduce((n, s) => n + s.layerEnd - s.layerStart, 0);
      const decision = planRetirement(plan, profiles, nodes, p.id);
      const droppedLayers = plan.pipelines.filter((q) => decision.dropped.includes(q.id)).flatMap((q) => q.stages).filter((s) => s.nodeId === p.id).reduce((n, s) => n + s.layerEnd - s.layerStart, 0);
      expect(decision.layersMoved, p.id).toBe(held - droppedLayers);
    }
  });

  it('counts moved layers by node: a stage kept on its node moves nothing', () => {
    expect(layersMoved([st('a', 0, 4), st('b', 4, 8)], [st('a', 0, 5), st('c', 5, 8)])).toBe(4);
    expect(layersMoved([st('a', 0, 8)], [st('a', 0, 8)])).toBe(0);
  });
});

describe('growth within the plan limits', () => {
  it('makes a newcomer a spare once its model has PLAN_LIMITS.pipelines copies (1,000): a flood of joins never passes the limit', () => {
    const models: ModelSpec[] = [{ id: 'base', layers: 1 }];
    const profiles: NodeProfile[] = Array.from({ length: PLAN_LIMITS.pipelines }, (_, i) => ({ id: `n${i}`, memoryGb: 4, score: 1 }));
    const plan: SwarmPlan = { models, pipelines: profiles.map((p, i) => pipe(`base/${i}`, 'base', st(p.id, 0, 1))) };
    const newcomer: NodeProfile = { id: 'one-more', memoryGb: 4, score: 1 };
    const all = [...profiles, newcomer];
    const grown = planGrowth(plan, all, SwarmState.fromProfiles(plan, all).nodes, newcomer, new Map([['base', 2]]), ids());
    expect(grown.role).toBe('spare');
    expect(grown.plan.pipelines).toHaveLength(PLAN_LIMITS.pipelines);
    // One copy fewer: it builds one.
    const fewer = { models, pipelines: plan.pipelines.slice(1) };
    const regrown = planGrowth(fewer, all, SwarmState.fromProfiles(fewer, all).nodes, newcomer, new Map([['base', 2]]), ids());
    expect(regrown.role).toBe('copy');
  });
});
