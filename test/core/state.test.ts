import { describe, expect, it } from 'vitest';
import { PlanError, SwarmError, SwarmState } from '../../src/index.js';
import type { NodeProfile, SwarmPlan, TelemetryPatch } from '../../src/index.js';
import { pipe, st, thrown } from './fixtures.js';

const plan: SwarmPlan = {
  models: [{ id: 'base', layers: 4 }],
  pipelines: [pipe('base/0', 'base', st('gpu', 0, 3), st('laptop', 3, 4))],
};

const swarmError = (fn: () => unknown): SwarmError => thrown(fn, SwarmError);

describe('SwarmState', () => {
  it('fromPlan: every node of the plan alive, nothing measured', () => {
    const state = SwarmState.fromPlan(plan);
    expect(state.plan).toBe(plan);
    expect(state.nodes).toEqual({ gpu: { alive: true, samples: 0 }, laptop: { alive: true, samples: 0 } });
  });

  it('fromProfiles: the declared latency and score on top of cold telemetry', () => {
    const profiles: NodeProfile[] = [
      { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 3 },
      { id: 'laptop', memoryGb: 8 },
      { id: 'spare', memoryGb: 16, score: 2 },
    ];
    const state = SwarmState.fromProfiles(plan, profiles);
    expect(state.nodes.gpu).toEqual({ alive: true, samples: 0, latencyMs: 3, score: 10 });
    expect(state.nodes.laptop).toEqual({ alive: true, samples: 0 });
    expect(state.nodes.spare).toEqual({ alive: true, samples: 0, score: 2 });
    expect(state.nodes.laptop?.load).toBeUndefined();
  });

  it('withNode returns a new state and leaves the old one unchanged', () => {
    const before = SwarmState.fromPlan(plan);
    const after = before.withNode('gpu', { alive: false, load: 0.5 });
    expect(after).not.toBe(before);
    expect(before.nodes.gpu).toEqual({ alive: true, samples: 0 });
    expect(after.nodes.gpu).toEqual({ alive: false, load: 0.5, samples: 0 });
    expect(after.nodes.laptop).toBe(before.nodes.laptop);
    expect(after.plan).toBe(before.plan);
  });

  it('carries suspicion through withNode and from, and refuses a suspect flag that is not a boolean', () => {
    const state = SwarmState.fromPlan(plan).withNode('gpu', { suspect: true });
    expect(state.nodes['gpu']).toEqual({ alive: true, samples: 0, suspect: true });
    expect(SwarmState.from(JSON.parse(JSON.stringify(state)) as SwarmState).nodes['gpu']?.suspect).toBe(true);
    expect(swarmError(() => SwarmState.fromPlan(plan).withNode('gpu', { suspect: 'yes' } as unknown as TelemetryPatch)).message).toMatch(/"suspect" must be a boolean/);
  });

  it('is frozen: telemetry cannot be changed in place', () => {
    const state = SwarmState.fromPlan(plan);
    expect(Object.isFrozen(state.nodes)).toBe(true);
    expect(Object.isFrozen(state.nodes.gpu)).toBe(true);
    expect(() => {
      (state.nodes as Record<string, unknown>).gpu = { alive: false, samples: 0 };
    }).toThrow(TypeError);
  });

  it('serialises to plain { plan, nodes }', () => {
    const state = SwarmState.fromPlan(plan).withNode('gpu', { latencyMs: 4 });
    expect(JSON.parse(JSON.stringify(state))).toEqual({ plan, nodes: { gpu: { alive: true, samples: 0, latencyMs: 4 }, laptop: { alive: true, samples: 0 } } });
  });

  it('throws UnknownNode for a node the state does not know, naming it', () => {
    const error = swarmError(() => SwarmState.fromPlan(plan).withNode('toaster', { alive: false }));
    expect(error.code).toBe('UnknownNode');
    expect(error.message).toContain('"toaster"');
  });

  it.each<[string, TelemetryPatch]>([
    ['latencyMs', { latencyMs: Number.NaN }],
    ['latencyMs', { latencyMs: -1 }],
    ['load', { load: Number.POSITIVE_INFINITY }],
    ['load', { load: -0.1 }],
    ['score', { score: 0 }],
    ['score', { score: Number.NaN }],
    ['samples', { samples: -3 }],
    ['alive', { alive: 'yes' as unknown as boolean }],
  ])('throws BadTelemetry naming %s for %o, leaving the state as it was', (field, patch) => {
    const state = SwarmState.fromPlan(plan);
    const error = swarmError(() => state.withNode('gpu', patch));
    expect(error.code).toBe('BadTelemetry');
    expect(error.message).toContain('"gpu"');
    expect(error.message).toContain(`"${field}"`);
    expect(state.nodes.gpu).toEqual({ alive: true, samples: 0 });
  });

  it('throws BadTelemetry for a patch that is not an object', () => {
    expect(swarmError(() => SwarmState.fromPlan(plan).withNode('gpu', null as unknown as TelemetryPatch)).code).toBe('BadTelemetry');
  });
});

describe('SwarmState input checks', () => {
  it.each<[string, SwarmPlan, string]>([
    ['a gap', { models: [{ id: 'm', layers: 4 }], pipelines: [pipe('m/0', 'm', st('a', 0, 1), st('b', 2, 4))] }, '[1, 2)'],
    ['an overlap', { models: [{ id: 'm', layers: 4 }], pipelines: [pipe('m/0', 'm', st('a', 0, 3), st('b', 2, 4))] }, '[2, 3)'],
    ['short coverage', { models: [{ id: 'm', layers: 4 }], pipelines: [pipe('m/0', 'm', st('a', 0, 3))] }, '"m" has 4'],
    ['an unknown model', { models: [{ id: 'm', layers: 4 }], pipelines: [pipe('x/0', 'x', st('a', 0, 4))] }, '"x"'],
    ['copies sharing a node', { models: [{ id: 'm', layers: 1, pipelines: 2 }], pipelines: [pipe('m/0', 'm', st('a', 0, 1)), pipe('m/1', 'm', st('a', 0, 1))] }, '"a"'],
  ])('fromPlan rejects a hand-written plan with %s as InvalidPlan, naming it', (_, bad, culprit) => {
    for (const make of [() => SwarmState.fromPlan(bad), () => SwarmState.fromProfiles(bad, [])]) {
      try {
        make();
        throw new Error('expected a PlanError');
      } catch (e) {
        expect(e).toBeInstanceOf(PlanError);
        expect((e as PlanError).code).toBe('InvalidPlan');
        expect((e as PlanError).message).toContain(culprit);
      }
    }
  });

  it('fromProfiles rejects a profile whose declared latency would poison every cost', () => {
    const bad: NodeProfile[] = [{ id: 'gpu', memoryGb: 24, latencyMs: Number.NaN }];
    expect(() => SwarmState.fromProfiles(plan, bad)).toThrow(PlanError);
    expect(() => SwarmState.fromProfiles(plan, bad)).toThrow(/"gpu".*"latencyMs"/);
  });
});
