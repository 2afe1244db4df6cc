import { describe, expect, it } from 'vitest';
import { routeRequest, RoutingError } from '../../src/index.js';
import type { RoutingRequest, SwarmPlan } from '../../src/index.js';
import { nodesOf, pipe, st, stateOf, thrown } from './fixtures.js';

const routingError = (fn: () => unknown): RoutingError => thrown(fn, RoutingError);

// base: two copies (b0 on a+b, b1 on c+d); expert: one copy on e.
const plan: SwarmPlan = {
  models: [
    { id: 'base', layers: 8, pipelines: 2 },
    { id: 'expert', layers: 8, kind: 'expert' },
  ],
  pipelines: [
    pipe('base/0', 'base', st('a', 0, 4), st('b', 4, 8)),
    pipe('base/1', 'base', st('c', 0, 4), st('d', 4, 8)),
    pipe('expert/0', 'expert', st('e', 0, 8)),
  ],
};
const fast = { latencyMs: 1, load: 0, score: 8 };
const slow = { latencyMs: 90, load: 0.9, score: 1 };

describe('routeRequest', () => {
  it('serves the cheapest intact copy of the requested model', () => {
    const route = routeRequest('base', {}, stateOf(plan, { a: slow, b: slow, c: fast, d: fast }));
    expect(route.pipelineId).toBe('base/1');
    expect(route.modelId).toBe('base');
    expect(nodesOf(route)).toEqual(['c', 'd']);
    expect(route.degraded).toBe(false);
  });

  it('breaks a cost tie by pipeline id, in string order', () => {
    const tie: SwarmPlan = {
      models: [{ id: 'm', layers: 2, pipelines: 3 }],
      // Listed out of order, and '10' < '9' as strings: the winner is 'm/10'.
      pipelines: [pipe('m/9', 'm', st('x', 0, 2)), pipe('m/10', 'm', st('y', 0, 2)), pipe('m/b', 'm', st('z', 0, 2))],
    };
    const state = stateOf(tie);
    expect(routeRequest('m', {}, state).pipelineId).toBe('m/10');
    expect(routeRequest('m', {}, state).pipelineId).toBe('m/10');
    // A strictly cheaper copy beats the tie-break.
    expect(routeRequest('m', {}, stateOf(tie, { z: fast })).pipelineId).toBe('m/b');
  });

  it('drops a copy with one dead node, even when it would be the cheapest', () => {
    const state = stateOf(plan, { a: fast, b: { ...fast, alive: false }, c: slow, d: slow });
    expect(routeRequest('base', {}, state).pipelineId).toBe('base/1');
  });

  it('skips a copy with a suspect node while an intact copy has none, and takes it when every intact copy has one', () => {
    const suspect = { ...fast, suspect: true };
    expect(routeRequest('base', {}, stateOf(plan, { a: suspect, b: fast, c: slow, d: slow })).pipelineId).toBe('base/1');
    expect(routeRequest('base', {}, stateOf(plan, { a: suspect, b: fast, c: slow, d: { ...slow, suspect: true } })).pipelineId).toBe('base/0');
    // A broken copy is no alternative: the suspect one serves.
    expect(routeRequest('base', {}, stateOf(plan, { a: suspect, b: fast, c: slow, d: { ...slow, alive: false } })).pipelineId).toBe('base/0');
  });

  it('treats a node missing from the telemetry as down, not as alive', () => {
    const cold = stateOf(plan);
    const { a: _dropped, ...rest } = cold.nodes;
    // Plain data with no entry for 'a': base/0 cannot be vouched for.
    const route = routeRequest('base', {}, { plan, nodes: { ...rest, b: { alive: true, samples: 1, ...fast } } });
    expect(route.pipelineId).toBe('base/1');
    expect(_dropped).toBeDefined();
  });

  it('matches the model exactly: an idle expert never serves the base model', () => {
    const idleExpert = { latencyMs: 0, load: 0, score: 100 };
    const busy = { latencyMs: 500, load: 5, score: 0.1 };
    const state = stateOf(plan, { a: busy, b: busy, c: busy, d: busy, e: idleExpert });
    expect(routeRequest('base', {}, state).modelId).toBe('base');
    expect(routeRequest('base', {}, state).pipelineId).toMatch(/^base\//);
    // Every base copy down: an error, not the expert.
    const down = state.withNode('a', { alive: false }).withNode('c', { alive: false });
    expect(routingError(() => routeRequest('base', {}, down)).code).toBe('NoHealthyPipeline');
    expect(routeRequest('expert', {}, down).pipelineId).toBe('expert/0');
  });

  it('throws UnknownModel naming the model and the models served', () => {
    const error = routingError(() => routeRequest('gpt-9', {}, stateOf(plan)));
    expect(error.code).toBe('UnknownModel');
    expect(error.message).toContain('"gpt-9"');
    expect(error.message).toContain('"base"');
  });

  it('throws NoHealthyPipeline naming every pipeline and its dead nodes', () => {
    const state = stateOf(plan, { b: { alive: false }, c: { alive: false }, d: { alive: false } });
    const error = routingError(() => routeRequest('base', {}, state));
    expect(error.code).toBe('NoHealthyPipeline');
    expect(error.message).toContain('"base"');
    expect(error.message).toContain('base/0 (b down)');
    expect(error.message).toContain('base/1 (c, d down)');
  });

  it('throws NoHealthyPipeline for a model the plan has no pipeline for', () => {
    const empty: SwarmPlan = { models: [{ id: 'base', layers: 4 }], pipelines: [] };
    expect(routingError(() => routeRequest('base', {}, stateOf(empty))).code).toBe('NoHealthyPipeline');
  });

  it('rejects NaN tokens and negative weights as InvalidRequest, naming the field', () => {
    const bad: RoutingRequest[] = [{ tokens: Number.NaN }, { weights: { load: -1 } }];
    for (const request of bad) {
      const error = routingError(() => routeRequest('base', request, stateOf(plan)));
      expect(error.code).toBe('InvalidRequest');
      expect(error.message).toMatch(/"(tokens|weights\.load)"/);
    }
  });

  it('returns plain data that does not alias the plan', () => {
    const state = stateOf(plan);
    const route = routeRequest('base', { tokens: 10 }, state);
    expect(JSON.parse(JSON.stringify(route))).toEqual(route);
    expect(route.stages).not.toBe(plan.pipelines[0]?.stages);
  });
});
