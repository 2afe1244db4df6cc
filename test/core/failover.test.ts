import { describe, expect, it } from 'vitest';
import { failoverInSwarm, pipelineCost, routeRequest, RoutingError } from '../../src/index.js';
import type { FailoverOptions, Recovery, Route, SwarmPlan } from '../../src/index.js';
import { nodesOf, pipe, st, stateOf, thrown } from './fixtures.js';

const unrecoverable = (fn: () => unknown): RoutingError => thrown(fn, RoutingError);

// m: 8 layers in two copies; 'small' is the reserve model.
const two: SwarmPlan = {
  models: [
    { id: 'm', layers: 8, pipelines: 2, fallback: 'small' },
    { id: 'small', layers: 2 },
    { id: 'tiny', layers: 1 },
  ],
  pipelines: [
    pipe('m/0', 'm', st('a', 0, 4), st('b', 4, 8)),
    pipe('m/1', 'm', st('c', 0, 4), st('d', 4, 8)),
    pipe('small/0', 'small', st('s', 0, 2)),
    pipe('tiny/0', 'tiny', st('t', 0, 1)),
  ],
};
const cheap = { latencyMs: 1, load: 0, score: 10 };
const pricey = { latencyMs: 1000, load: 3, score: 0.1 };
const routeOf = (plan: SwarmPlan, pipelineId: string, state = stateOf(plan)) => {
  const p = plan.pipelines.find((x) => x.id === pipelineId);
  if (p === undefined) throw new Error(pipelineId);
  return { modelId: p.modelId, pipelineId, stages: p.stages, cost: pipelineCost(p.stages, state.nodes), hops: p.stages.length - 1, degraded: false };
};

describe('failoverInSwarm', () => {
  it('switches to an intact copy, whole', () => {
    const state = stateOf(two);
    const recovery = failoverInSwarm(routeOf(two, 'm/0'), 'a', state);
    expect(recovery.strategy).toBe('copy');
    expect(recovery.degraded).toBe(false);
    expect(recovery.route.pipelineId).toBe('m/1');
    expect(recovery.route.stages).toEqual(two.pipelines[1]?.stages);
    expect(recovery.route.modelId).toBe('m');
    expect(recovery.replaced).toEqual([]);
    expect(recovery.missingLayers).toEqual([]);
    expect(recovery.from.pipelineId).toBe('m/0');
  });

  it('prefers the intact copy to a splice even when the splice is cheaper', () => {
    // Splice c[0,4)+b[4,8) costs far less than the copy c+d, with d priced out.
    const state = stateOf(two, { b: cheap, c: cheap, d: pricey });
    const splice = pipelineCost([st('c', 0, 4), st('b', 4, 8)], state.nodes);
    const copy = pipelineCost([st('c', 0, 4), st('d', 4, 8)], state.nodes);
    expect(splice).toBeLessThan(copy);
    const recovery = failoverInSwarm(routeOf(two, 'm/0', state), 'a', state);
    expect(recovery.strategy).toBe('copy');
    expect(nodesOf(recovery.route)).toEqual(['c', 'd']);
  });

  it('returns the cheapest of several intact copies', () => {
    const three: SwarmPlan = {
      models: [{ id: 'm', layers: 2, pipelines: 3 }],
      pipelines: [pipe('m/0', 'm', st('a', 0, 2)), pipe('m/1', 'm', st('b', 0, 2)), pipe('m/2', 'm', st('c', 0, 2))],
    };
    const state = stateOf(three, { b: pricey, c: cheap });
    expect(failoverInSwarm(routeOf(three, 'm/0', state), 'a', state).route.pipelineId).toBe('m/2');
  });

  it('counts the failed node as dead even if the state still marks it alive', () => {
    // m/0 is by far the cheapest and 'a' is alive in the state: it must still not come back.
    const state = stateOf(two, { a: cheap, b: cheap, c: pricey, d: pricey });
    expect(state.nodes.a?.alive).toBe(true);
    const recovery = failoverInSwarm(routeOf(two, 'm/0', state), 'a', state);
    expect(recovery.strategy).toBe('copy');
    expect(nodesOf(recovery.route)).not.toContain('a');
  });

  it('splices the lost layers from another copy when no copy is intact', () => {
    const state = stateOf(two, { d: { alive: false } });
    const recovery = failoverInSwarm(routeOf(two, 'm/0', state), 'a', state);
    expect(recovery.strategy).toBe('splice');
    expect(recovery.degraded).toBe(false);
    expect(recovery.route.stages).toEqual([st('c', 0, 4), st('b', 4, 8)]);
    expect(recovery.replaced).toEqual([{ layerStart: 0, layerEnd: 4, from: 'a', to: 'c' }]);
    // The splice is reported under the pipeline it was rebuilt from.
    expect(recovery.route.pipelineId).toBe('m/0');
    expect(recovery.route.modelId).toBe('m');
    expect(recovery.route.hops).toBe(1);
    expect(recovery.route.cost).toBeCloseTo(pipelineCost(recovery.route.stages, state.nodes), 9);
  });

  it('splices one lost stage over several nodes', () => {
    // a[0,6) is lost; c holds [0,3) and f holds [3,8) in two other broken copies.
    const three: SwarmPlan = {
      models: [{ id: 'm', layers: 8, pipelines: 3 }],
      pipelines: [
        pipe('m/0', 'm', st('a', 0, 6), st('b', 6, 8)),
        pipe('m/1', 'm', st('c', 0, 3), st('d', 3, 8)),
        pipe('m/2', 'm', st('e', 0, 3), st('f', 3, 8)),
      ],
    };
    const state = stateOf(three, { d: { alive: false }, e: { alive: false } });
    const recovery = failoverInSwarm(routeOf(three, 'm/0', state), 'a', state);
    expect(recovery.strategy).toBe('splice');
    expect(recovery.route.stages).toEqual([st('c', 0, 3), st('f', 3, 6), st('b', 6, 8)]);
    expect(recovery.replaced).toEqual([
      { layerStart: 0, layerEnd: 3, from: 'a', to: 'c' },
      { layerStart: 3, layerEnd: 6, from: 'a', to: 'f' },
    ]);
    expect(recovery.route.hops).toBe(2);
  });

  it('picks the cheapest cover for a splice', () => {
    const three: SwarmPlan = {
      models: [{ id: 'm', layers: 4, pipelines: 3 }],
      pipelines: [
        pipe('m/0', 'm', st('a', 0, 2), st('b', 2, 4)),
        pipe('m/1', 'm', st('c', 0, 2), st('d', 2, 4)),
        pipe('m/2', 'm', st('e', 0, 2), st('f', 2, 4)),
      ],
    };
    const state = stateOf(three, { d: { alive: false }, f: { alive: false }, c: pricey, e: cheap });
    const recovery = failoverInSwarm(routeOf(three, 'm/0', state), 'a', state);
    expect(recovery.strategy).toBe('splice');
    expect(recovery.replaced).toEqual([{ layerStart: 0, layerEnd: 2, from: 'a', to: 'e' }]);
  });

  it('degrades to the survivors under the spec fallback model only when allowed', () => {
    const state = stateOf(two, { c: { alive: false } });
    const route = routeOf(two, 'm/0', state);
    const recovery = failoverInSwarm(route, 'a', state, { allowDegraded: true });
    expect(recovery.strategy).toBe('degraded');
    expect(recovery.degraded).toBe(true);
    expect(recovery.route.degraded).toBe(true);
    expect(recovery.route.modelId).toBe('small');
    expect(recovery.route.stages).toEqual([st('b', 4, 8)]);
    expect(recovery.missingLayers).toEqual([{ layerStart: 0, layerEnd: 4 }]);
    expect(recovery.route.pipelineId).toBe('m/0');
    expect(recovery.route.hops).toBe(0);

    const error = unrecoverable(() => failoverInSwarm(route, 'a', state));
    expect(error.code).toBe('Unrecoverable');
    expect(unrecoverable(() => failoverInSwarm(route, 'a', state, { allowDegraded: false })).code).toBe('Unrecoverable');
  });

  it('reports the fallback named in the options over the one in the model spec', () => {
    const state = stateOf(two, { c: { alive: false } });
    const recovery = failoverInSwarm(routeOf(two, 'm/0', state), 'a', state, { allowDegraded: true, fallbackModel: 'tiny' });
    expect(recovery.route.modelId).toBe('tiny');
  });

  it('keeps the model id on a degraded route when no fallback is named anywhere', () => {
    const plain: SwarmPlan = { models: [{ id: 'm', layers: 8, pipelines: 2 }], pipelines: two.pipelines.filter((p) => p.modelId === 'm') };
    const state = stateOf(plain, { c: { alive: false } });
    const recovery = failoverInSwarm(routeOf(plain, 'm/0', state), 'a', state, { allowDegraded: true });
    expect(recovery.strategy).toBe('degraded');
    expect(recovery.route.modelId).toBe('m');
  });

  it('rejects an unknown fallback model', () => {
    const state = stateOf(two, { c: { alive: false } });
    const error = unrecoverable(() => failoverInSwarm(routeOf(two, 'm/0', state), 'a', state, { allowDegraded: true, fallbackModel: 'nope' }));
    expect(error.code).toBe('UnknownModel');
  });

  it('throws Unrecoverable naming the model and the failed node when nothing is left', () => {
    const single: SwarmPlan = { models: [{ id: 'm', layers: 2 }], pipelines: [pipe('m/0', 'm', st('a', 0, 2))] };
    const state = stateOf(single);
    const error = unrecoverable(() => failoverInSwarm(routeOf(single, 'm/0'), 'a', state, { allowDegraded: true }));
    expect(error.code).toBe('Unrecoverable');
    expect(error.message).toContain('"m"');
    expect(error.message).toContain('"a"');
  });

  it('names the layers nobody holds in the Unrecoverable message', () => {
    // a[0,4) lost; c (holding [0,4) in m/1) down too: [0,4) is nobody's, [4,8) is not lost.
    const state = stateOf(two, { c: { alive: false } });
    const error = unrecoverable(() => failoverInSwarm(routeOf(two, 'm/0', state), 'a', state));
    expect(error.message).toContain('[0, 4)');
    expect(error.message).not.toContain('[4, 8)');
  });

  it('leaves a route that does not use the failed node unaffected', () => {
    const state = stateOf(two);
    const route = routeOf(two, 'm/0', state);
    const recovery: Recovery = failoverInSwarm(route, 'c', state);
    expect(recovery.strategy).toBe('unaffected');
    expect(recovery.degraded).toBe(false);
    expect(recovery.route).toEqual(route);
    expect(recovery.from).toEqual(route);
    expect(recovery.replaced).toEqual([]);
  });

  it('recovers a route taken by routeRequest, through the copy it did not use', () => {
    const state = stateOf(two, { a: cheap, b: cheap });
    const route = routeRequest('m', { tokens: 256 }, state);
    expect(route.pipelineId).toBe('m/0');
    const recovery = failoverInSwarm(route, 'b', state, { request: { tokens: 256 } });
    expect(recovery.route.pipelineId).toBe('m/1');
    expect(recovery.route.cost).toBeCloseTo(pipelineCost(recovery.route.stages, state.nodes, { tokens: 256 }), 9);
  });

  it('recovers a degraded route to the whole model when a copy is back, under the original model id', () => {
    // Serving degraded m/0 (a lost, c down), then b fails too after c came back.
    const down = stateOf(two, { c: { alive: false } });
    const degraded = failoverInSwarm(routeOf(two, 'm/0', down), 'a', down, { allowDegraded: true }).route;
    expect(degraded.modelId).toBe('small');
    const later = down.withNode('a', { alive: false }).withNode('c', { alive: true });
    const recovery = failoverInSwarm(degraded, 'b', later, { allowDegraded: true });
    expect(recovery.strategy).toBe('copy');
    expect(recovery.route.modelId).toBe('m');
    expect(recovery.route.pipelineId).toBe('m/1');
  });

  it('splices every missing layer of a degraded route, not only the newly lost ones', () => {
    const three: SwarmPlan = {
      models: [{ id: 'm', layers: 6, pipelines: 2 }],
      pipelines: [pipe('m/0', 'm', st('a', 0, 2), st('b', 2, 4), st('c', 4, 6)), pipe('m/1', 'm', st('x', 0, 3), st('y', 3, 6))],
    };
    const first = stateOf(three, { a: { alive: false }, x: { alive: false } });
    const degraded = failoverInSwarm(routeOf(three, 'm/0', first), 'a', first, { allowDegraded: true });
    expect(degraded.missingLayers).toEqual([{ layerStart: 0, layerEnd: 2 }]);
    // x is back, c fails: m/1 (x, y) is intact, so a whole copy comes first.
    const later = first.withNode('x', { alive: true });
    expect(failoverInSwarm(degraded.route, 'c', later, { allowDegraded: true }).strategy).toBe('copy');
    // With y gone too there is no copy; x holds [0,2) again but nobody live holds [4,6): degraded, missing both.
    const noY = later.withNode('y', { alive: false });
    const still = failoverInSwarm(degraded.route, 'c', noY, { allowDegraded: true });
    expect(still.strategy).toBe('degraded');
    expect(still.missingLayers).toEqual([
      { layerStart: 0, layerEnd: 2 },
      { layerStart: 4, layerEnd: 6 },
    ]);
    expect(still.route.stages).toEqual([st('b', 2, 4)]);
  });

  it('never returns a non-degraded route with layers missing after a degraded one', () => {
    const three: SwarmPlan = {
      models: [{ id: 'm', layers: 6, pipelines: 3 }],
      pipelines: [
        pipe('m/0', 'm', st('a', 0, 2), st('b', 2, 4), st('c', 4, 6)),
        pipe('m/1', 'm', st('x', 0, 2), st('y', 2, 6)),
        pipe('m/2', 'm', st('p', 0, 3), st('q', 3, 6)),
      ],
    };
    // a lost with x and p down: degraded to b[2,4) c[4,6).
    const first = stateOf(three, { a: { alive: false }, x: { alive: false }, p: { alive: false } });
    const degraded = failoverInSwarm(routeOf(three, 'm/0', first), 'a', first, { allowDegraded: true });
    expect(degraded.strategy).toBe('degraded');
    // c fails; y and q are alive and hold [4,6), but nobody holds [0,2): not a splice.
    const recovery = failoverInSwarm(degraded.route, 'c', first, { allowDegraded: true });
    expect(recovery.strategy).toBe('degraded');
    expect(recovery.route.stages).toEqual([st('b', 2, 4)]);
    expect(recovery.missingLayers).toEqual([
      { layerStart: 0, layerEnd: 2 },
      { layerStart: 4, layerEnd: 6 },
    ]);
    expect(() => failoverInSwarm(degraded.route, 'c', first)).toThrow(RoutingError);
  });
});

describe('failoverInSwarm input checks', () => {
  it.each<[string, () => unknown]>([
    ['a null route', () => failoverInSwarm(null as unknown as Route, 'a', stateOf(two))],
    ['a route without stages', () => failoverInSwarm({ modelId: 'm' } as unknown as Route, 'a', stateOf(two))],
    ['a numeric node id', () => failoverInSwarm(routeOf(two, 'm/0'), 7 as unknown as string, stateOf(two))],
    ['null options', () => failoverInSwarm(routeOf(two, 'm/0'), 'a', stateOf(two), null as unknown as FailoverOptions)],
    ['NaN tokens in the request', () => failoverInSwarm(routeOf(two, 'm/0'), 'a', stateOf(two), { request: { tokens: Number.NaN } })],
  ])('rejects %s as InvalidRequest rather than crashing', (_, call) => {
    expect(unrecoverable(call).code).toBe('InvalidRequest');
  });

  it('rejects a route of an unknown model as UnknownModel', () => {
    const route = { ...routeOf(two, 'm/0'), modelId: 'ghost', pipelineId: 'ghost/0' };
    expect(unrecoverable(() => failoverInSwarm(route, 'a', stateOf(two))).code).toBe('UnknownModel');
  });
});
