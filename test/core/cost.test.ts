import { describe, expect, it } from 'vitest';
import { nodeCost, pipelineCost, routeRequest, RoutingError } from '../../src/index.js';
import { resolveRequest } from '../../src/core/cost.js';
import type { RoutingRequest } from '../../src/index.js';
import { pipe, st, stateOf } from './fixtures.js';

// The original cost model (costModel: 'original', the seed's formula), worked by hand.
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
const ORIGINAL = { costModel: 'original' } as const;
const costWith = (request: RoutingRequest) => routeRequest('base', { ...ORIGINAL, ...request }, state).cost;

describe("route cost, costModel 'original' (docs/design.md §4)", () => {
  it('equals the formula worked out by hand', () => {
    const route = routeRequest('base', { tokens: 512, ...ORIGINAL }, state);
    expect(route.cost).toBeCloseTo(120 + 75 + 15 + 5, 9);
    expect(route.cost).toBeCloseTo(215, 9);
    expect(route.hops).toBe(1);
  });

  it('counts hops as stages − 1', () => {
    const three = { models: [{ id: 'base', layers: 3 }], pipelines: [pipe('base/0', 'base', st('x', 0, 1), st('y', 1, 2), st('z', 2, 3))] };
    const one = { models: [{ id: 'base', layers: 3 }], pipelines: [pipe('base/0', 'base', st('x', 0, 3))] };
    // Cold nodes: 100 + 1·120 + 100/1 = 320 each.
    expect(routeRequest('base', ORIGINAL, stateOf(three)).hops).toBe(2);
    expect(routeRequest('base', ORIGINAL, stateOf(three)).cost).toBeCloseTo(3 * 320 + 15 * 2, 9);
    expect(routeRequest('base', ORIGINAL, stateOf(one)).hops).toBe(0);
    expect(routeRequest('base', ORIGINAL, stateOf(one)).cost).toBeCloseTo(320, 9);
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
    const route = routeRequest('base', { tokens: 512, ...ORIGINAL }, state);
    expect(pipelineCost(route.stages, state.nodes, { tokens: 512, ...ORIGINAL })).toBeCloseTo(route.cost, 9);
  });
});

// The default, layer-aware cost model on the same copy: a's stage runs 4 of 12 layers, b's 8.
//   a: 10 + 60 + 100·(4/12)/2 = 70 + 16.667 = 86.667
//   b: 20 + 30 + 100·(8/12)/4 = 50 + 16.667 = 66.667
//   + hops 15 + tokens 5 → 173.333
describe("route cost, costModel 'layer-aware' (the default, docs/cost.md)", () => {
  it('equals the formula worked out by hand', () => {
    expect(routeRequest('base', { tokens: 512 }, state).cost).toBeCloseTo(70 + 100 / 6 + 50 + 100 / 6 + 15 + 5, 9);
    expect(routeRequest('base', { tokens: 512, costModel: 'layer-aware' }, state).cost).toBeCloseTo(routeRequest('base', { tokens: 512 }, state).cost, 12);
  });

  it("costs a copy on one node what the original design says (100/score)", () => {
    const one = { models: [{ id: 'base', layers: 12 }], pipelines: [pipe('base/0', 'base', st('x', 0, 12))] };
    const s1 = stateOf(one, { x: { latencyMs: 3, load: 0.5, score: 4 } });
    expect(routeRequest('base', {}, s1).cost).toBeCloseTo(3 + 60 + 25, 9);
    expect(routeRequest('base', {}, s1).cost).toBeCloseTo(routeRequest('base', ORIGINAL, s1).cost, 9);
  });

  it('costs a copy split evenly over equal nodes the same compute plus its per-stage terms and hops', () => {
    const one = { models: [{ id: 'base', layers: 12 }], pipelines: [pipe('base/0', 'base', st('x', 0, 12))] };
    const three = { models: [{ id: 'base', layers: 12 }], pipelines: [pipe('base/0', 'base', st('x', 0, 4), st('y', 4, 8), st('z', 8, 12))] };
    const t = { latencyMs: 2, load: 0, score: 5 };
    const c1 = routeRequest('base', {}, stateOf(one, { x: t })).cost;
    const c3 = routeRequest('base', {}, stateOf(three, { x: t, y: t, z: t })).cost;
    // Compute 100/5 = 20 either way; the split adds two nodes' latency (2 each) and two hops (15 each).
    expect(c1).toBeCloseTo(2 + 20, 9);
    expect(c3).toBeCloseTo(3 * 2 + 20 + 2 * 15, 9);
  });

  it('weighs a one-layer stage as one layer, where the original weighs it as a whole node', () => {
    // Two copies of 32 layers on score-1 nodes: a lone node, or a fast node with a one-layer tail.
    const plan2 = {
      models: [{ id: 'base', layers: 32, pipelines: 2 }],
      pipelines: [pipe('base/0', 'base', st('fast', 0, 31), st('tail', 31, 32)), pipe('base/1', 'base', st('slow', 0, 32))],
    };
    const s2 = stateOf(plan2, { fast: { latencyMs: 1, load: 0, score: 16 }, tail: { latencyMs: 1, load: 0, score: 16 }, slow: { latencyMs: 1, load: 0, score: 1 } });
    // layer-aware: base/0 = 1 + 100·(31/32)/16 + 1 + 100·(1/32)/16 + 15 = 23.25; base/1 = 1 + 100 = 101
    expect(routeRequest('base', {}, s2).pipelineId).toBe('base/0');
    expect(routeRequest('base', {}, s2).cost).toBeCloseTo(2 + 100 / 16 + 15, 9);
    // original: base/0 = 1 + 6.25 + 1 + 6.25 + 15 = 29.5, still cheaper; a slower tail flips it.
    const s3 = s2.withNode('tail', { score: 0.5 });
    expect(routeRequest('base', ORIGINAL, s3).pipelineId).toBe('base/1');
    expect(routeRequest('base', {}, s3).pipelineId).toBe('base/0');
  });

  it("passes the model's layer count for a chain that does not cover it (pipelineCost)", () => {
    const half = [st('a', 0, 6)];
    expect(pipelineCost(half, state.nodes, {}, 12)).toBeCloseTo(10 + 60 + 100 * 0.5 / 2, 9);
    expect(pipelineCost(half, state.nodes, {})).toBeCloseTo(10 + 60 + 100 / 2, 9);
  });

  it('counts an unknown load as one loaded node per copy, spread by layer share; a measured load counts whole', () => {
    const cold = { alive: true, samples: 0 } as const;
    // A quarter of the model on an unmeasured node: 100 + 1·0.25·120 + 100·0.25/1 = 155.
    expect(nodeCost(cold, undefined, undefined, 0, 0.25)).toBeCloseTo(100 + 30 + 25, 9);
    expect(nodeCost({ ...cold, load: 1 }, undefined, undefined, 0, 0.25)).toBeCloseTo(100 + 120 + 25, 9);
  });

  it("picks the faster copy cold on the example's two-copy plan, where the original picks the copy 2.9x slower per token", () => {
    // examples/swarm.json profiles; copy 0 = gpu 22 + desktop 8 + tablet 2, copy 1 = laptop 18 + mini-pc 14.
    const plan13 = {
      models: [{ id: 'hecate-8b', layers: 32, pipelines: 2 }],
      pipelines: [
        pipe('hecate-8b/0', 'hecate-8b', st('gpu', 0, 22), st('desktop', 22, 30), st('tablet', 30, 32)),
        pipe('hecate-8b/1', 'hecate-8b', st('laptop', 0, 18), st('mini-pc', 18, 32)),
      ],
    };
    const declared = stateOf(plan13, {
      gpu: { latencyMs: 4, score: 16 },
      desktop: { latencyMs: 6, score: 6 },
      laptop: { latencyMs: 9, score: 3 },
      'mini-pc': { latencyMs: 8, score: 2.5 },
      tablet: { latencyMs: 14, score: 1.5 },
    });
    // compute 100/32·(22/16 + 8/6 + 2/1.5) = 12.63 against 100/32·(18/3 + 14/2.5) = 36.25
    const copy0 = 4 + 6 + 14 + 120 + (100 / 32) * (22 / 16 + 8 / 6 + 2 / 1.5) + 2 * 15;
    const copy1 = 9 + 8 + 120 + (100 / 32) * (18 / 3 + 14 / 2.5) + 15;
    expect(routeRequest('hecate-8b', {}, declared).pipelineId).toBe('hecate-8b/0');
    expect(routeRequest('hecate-8b', {}, declared).cost).toBeCloseTo(copy0, 9);
    expect(copy0).toBeLessThan(copy1);
    const original = routeRequest('hecate-8b', { tokens: 256, ...ORIGINAL }, declared);
    expect(original.pipelineId).toBe('hecate-8b/1');
    expect(original.cost).toBeCloseTo(347.8, 0);
  });

  it("rejects an unknown cost model as InvalidRequest", () => {
    expect(() => resolveRequest({ costModel: 'fastest' as unknown as 'original' })).toThrow(/costModel/);
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
    // 5 + 0·120 + 100/10 = 15 (one node holding the whole model: the same under both cost models)
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
      costModel: 'layer-aware',
      isDefault: true,
    });
    expect(resolveRequest({ costModel: 'original' }).isDefault).toBe(false);
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
