import { describe, expect, it } from 'vitest';
import { nodeCost, pipelineCost, routeRequest, RoutingError } from '../../src/index.js';
import { resolveRequest } from '../../src/core/cost.js';
import type { RoutingRequest } from '../../src/index.js';
import { pipe, st, stateOf } from './fixtures.js';

// One model of 12 layers in one copy on two measured nodes:
//   a: latency 10, load 0.5,  score 2  → 10 + 0.5·120 + 100/2  = 10 + 60 + 50 = 120
//   b: latency 20, load 0.25, score 4  → 20 + 0.25·120 + 100/4 = 20 + 30 + 25 = 75
//   hops = 2 stages − 1 = 1            → 15·1 = 15
//   tokens = 512                       → 10·512/1024 = 5
//   cost = 120 + 75 + 15 + 5 = 215
const plan = { models: [{ id: 'base', layers: 12 }], pipelines: [pipe('base/0', 'base', st('a', 0, 4), st('b', 4, 12))] };
const state = stateOf(plan, {
  a: { latencyMs: 10, load: 0.5, score: 2 },
  b: { latencyMs: 20, load: 0.25, score: 4 },
});
const costWith = (request: RoutingRequest) => routeRequest('base', request, state).cost;

describe('route cost (docs/design.md §4)', () => {
  it('equals the formula worked out by hand', () => {
    const route = routeRequest('base', { tokens: 512 }, state);
    expect(route.cost).toBeCloseTo(120 + 75 + 15 + 5, 9);
    expect(route.cost).toBeCloseTo(215, 9);
    expect(route.hops).toBe(1);
  });

  it('counts hops as stages − 1', () => {
    const three = { models: [{ id: 'base', layers: 3 }], pipelines: [pipe('base/0', 'base', st('x', 0, 1), st('y', 1, 2), st('z', 2, 3))] };
    const one = { models: [{ id: 'base', layers: 3 }], pipelines: [pipe('base/0', 'base', st('x', 0, 3))] };
    // Cold nodes: 100 + 1·120 + 100/1 = 320 each.
    expect(routeRequest('base', {}, stateOf(three)).hops).toBe(2);
    expect(routeRequest('base', {}, stateOf(three)).cost).toBeCloseTo(3 * 320 + 15 * 2, 9);
    expect(routeRequest('base', {}, stateOf(one)).hops).toBe(0);
    expect(routeRequest('base', {}, stateOf(one)).cost).toBeCloseTo(320, 9);
  });

  it('adds 10·tokens/1024 for the tokens, and nothing without tokens', () => {
    expect(costWith({})).toBeCloseTo(210, 9);
    expect(costWith({ tokens: 1024 })).toBeCloseTo(210 + 10, 9);
    expect(costWith({ tokens: 3072 })).toBeCloseTo(210 + 30, 9);
  });

  it('scales the latency term by weights.latency', () => {
    // latency terms 10 + 20 = 30 count twice: 215 + 30
    expect(costWith({ tokens: 512, weights: { latency: 2 } })).toBeCloseTo(245, 9);
    expect(costWith({ tokens: 512, weights: { latency: 0 } })).toBeCloseTo(185, 9);
  });

  it('scales the load term by weights.load', () => {
    // load terms 60 + 30 = 90; weight 3 adds 2·90
    expect(costWith({ tokens: 512, weights: { load: 3 } })).toBeCloseTo(395, 9);
  });

  it('scales the capability term by weights.capability', () => {
    // capability terms 50 + 25 = 75; weight 0.5 removes 37.5
    expect(costWith({ tokens: 512, weights: { capability: 0.5 } })).toBeCloseTo(177.5, 9);
  });

  it('scales the hops term by weights.hops', () => {
    expect(costWith({ tokens: 512, weights: { hops: 2 } })).toBeCloseTo(230, 9);
  });

  it('scales the tokens term by weights.tokens', () => {
    expect(costWith({ tokens: 512, weights: { tokens: 4 } })).toBeCloseTo(230, 9);
  });

  it('floors the score at 0.01 in the capability term', () => {
    expect(nodeCost({ alive: true, samples: 1, latencyMs: 0, load: 0, score: 0.001 })).toBeCloseTo(100 / 0.01, 9);
  });

  it('agrees with pipelineCost on the same stages', () => {
    const route = routeRequest('base', { tokens: 512 }, state);
    expect(pipelineCost(route.stages, state.nodes, { tokens: 512 })).toBeCloseTo(route.cost, 9);
  });
});

describe('unmeasured telemetry (docs/design.md §4 [decision])', () => {
  it('penalises an unmeasured node with latency 100, load 1.0 and score 1.0', () => {
    // 100 + 1·120 + 100/1 = 320
    expect(nodeCost({ alive: true, samples: 0 })).toBeCloseTo(320, 9);
    expect(nodeCost(undefined)).toBeCloseTo(320, 9);
  });

  it('penalises each missing field on its own', () => {
    expect(nodeCost({ alive: true, samples: 1, latencyMs: 5 })).toBeCloseTo(5 + 120 + 100, 9);
    expect(nodeCost({ alive: true, samples: 1, load: 0 })).toBeCloseTo(100 + 0 + 100, 9);
    expect(nodeCost({ alive: true, samples: 1, score: 4 })).toBeCloseTo(100 + 120 + 25, 9);
  });

  it('makes an unmeasured node cost more than a plausibly measured one', () => {
    const plausible = nodeCost({ alive: true, samples: 10, latencyMs: 80, load: 0.8, score: 1 });
    expect(plausible).toBeCloseTo(80 + 96 + 100, 9);
    expect(nodeCost({ alive: true, samples: 0 })).toBeGreaterThan(plausible);
  });

  it('sends the request to the measured copy, not the unmeasured one', () => {
    const two = {
      models: [{ id: 'base', layers: 2, pipelines: 2 }],
      pipelines: [pipe('base/0', 'base', st('known', 0, 2)), pipe('base/1', 'base', st('cold', 0, 2))],
    };
    // 'base/0' would lose the tie-break if unknown values counted as zero.
    const route = routeRequest('base', {}, stateOf(two, { known: { latencyMs: 50, load: 0.5, score: 1 } }));
    expect(route.pipelineId).toBe('base/0');
  });

  it('takes the penalties from request.penalties', () => {
    const cold = { models: [{ id: 'base', layers: 1 }], pipelines: [pipe('base/0', 'base', st('c', 0, 1))] };
    const route = routeRequest('base', { penalties: { latencyMs: 5, load: 0, score: 10 } }, stateOf(cold));
    // 5 + 0·120 + 100/10 = 15
    expect(route.cost).toBeCloseTo(15, 9);
    // Measured values are not penalised.
    const measured = stateOf(cold, { c: { latencyMs: 1, load: 0, score: 100 } });
    expect(routeRequest('base', { penalties: { latencyMs: 1000 } }, measured).cost).toBeCloseTo(1 + 0 + 1, 9);
  });
});

describe('resolveRequest', () => {
  it('fills every default', () => {
    expect(resolveRequest({})).toEqual({
      tokens: 0,
      weights: { latency: 1, load: 1, capability: 1, hops: 1, tokens: 1 },
      penalties: { latencyMs: 100, load: 1, score: 1 },
      isDefault: true,
    });
  });

  it.each([
    [{ tokens: Number.NaN }, 'tokens'],
    [{ tokens: -1 }, 'tokens'],
    [{ tokens: Number.POSITIVE_INFINITY }, 'tokens'],
    [{ weights: { latency: -1 } }, 'weights.latency'],
    [{ weights: { hops: Number.NaN } }, 'weights.hops'],
    [{ penalties: { latencyMs: -5 } }, 'penalties.latencyMs'],
    [{ penalties: { score: Number.NaN } }, 'penalties.score'],
  ] as Array<[RoutingRequest, string]>)('rejects %o naming %s as InvalidRequest', (request, field) => {
    const error = (() => {
      try {
        resolveRequest(request);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(RoutingError);
    expect((error as RoutingError).code).toBe('InvalidRequest');
    expect((error as RoutingError).message).toContain(`"${field}"`);
  });

  it('rejects a request that is not an object, and weights or penalties that are not objects', () => {
    for (const bad of [null, 5, 'fast', { weights: 3 }, { penalties: 'none' }, { weights: null }]) {
      expect(() => resolveRequest(bad as unknown as RoutingRequest)).toThrow(RoutingError);
    }
  });
});
