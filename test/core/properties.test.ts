/**
 * Seeded property tests of docs/design.md §2–§6 over generated swarms. Every expectation is computed here by
 * brute force, independently of the code under test.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chainCost, resolveRequest } from '../../src/core/cost.js';
import {
  failoverInSwarm,
  PlanError,
  pipelineCost,
  planSwarm,
  routeRequest,
  RoutingError,
  SwarmState,
  validatePlan,
} from '../../src/index.js';
import type { ModelSpec, NodeProfile, Pipeline, Recovery, Route, RoutingRequest, Stage, SwarmPlan } from '../../src/index.js';
import { coversExactly, SEEDED, worldArb, type World } from './fixtures.js';

const requestArb: fc.Arbitrary<RoutingRequest> = fc.record(
  {
    tokens: fc.integer({ min: 0, max: 4096 }),
    weights: fc.record(
      { latency: fc.constantFrom(0, 0.5, 1, 2), load: fc.constantFrom(0, 1, 3), hops: fc.constantFrom(0, 1, 5), capability: fc.constantFrom(0.5, 1) },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

const pipelinesOf = (plan: SwarmPlan, modelId: string) => plan.pipelines.filter((p) => p.modelId === modelId);
const layersOf = (plan: SwarmPlan, modelId: string) => plan.models.find((m) => m.id === modelId)?.layers ?? -1;
const liveIn = (world: World, dead: ReadonlySet<string>) => (id: string) => !dead.has(id) && world.state.nodes[id]?.alive === true;

/** Layers of `[0, layers)` no live stage of the route serves. */
function lostLayers(route: Route, layers: number, live: (id: string) => boolean): number[] {
  const out: number[] = [];
  for (let l = 0; l < layers; l++) if (!route.stages.some((s) => live(s.nodeId) && s.layerStart <= l && l < s.layerEnd)) out.push(l);
  return out;
}

/** What docs/design.md §6 says the strategy must be, found by brute force. */
function expectedStrategy(world: World, route: Route, modelId: string, failed: string, allowDegraded: boolean): Recovery['strategy'] | 'Unrecoverable' {
  if (!route.stages.some((s) => s.nodeId === failed)) return 'unaffected';
  const live = liveIn(world, new Set([failed]));
  const pipelines = pipelinesOf(world.plan, modelId);
  if (pipelines.some((p) => p.stages.every((s) => live(s.nodeId)))) return 'copy';
  const held = (l: number) => pipelines.some((p) => p.stages.some((s) => live(s.nodeId) && s.layerStart <= l && l < s.layerEnd));
  if (lostLayers(route, layersOf(world.plan, modelId), live).every(held)) return 'splice';
  if (allowDegraded && route.stages.some((s) => live(s.nodeId))) return 'degraded';
  return 'Unrecoverable';
}

/** The route of a planned pipeline, as routeRequest would build it. */
function routeOfPipeline(p: Pipeline, world: World): Route {
  return { modelId: p.modelId, pipelineId: p.id, stages: p.stages, cost: pipelineCost(p.stages, world.state.nodes), hops: p.stages.length - 1, degraded: false };
}

/** Runs a failover, returning its recovery or the code it threw. */
function attempt(fn: () => Recovery): Recovery | 'Unrecoverable' {
  try {
    return fn();
  } catch (e) {
    if (e instanceof RoutingError && e.code === 'Unrecoverable') return 'Unrecoverable';
    throw e;
  }
}

/** Checks one recovery against every rule of docs/design.md §6 that does not depend on the strategy chosen. */
function checkRecovery(world: World, lost: Route, modelId: string, failed: string, recovery: Recovery): void {
  const live = liveIn(world, new Set([failed]));
  const layers = layersOf(world.plan, modelId);
  expect(recovery.from).toEqual(lost);
  if (recovery.strategy === 'unaffected') {
    expect(recovery.route).toEqual(lost);
    return;
  }
  expect(recovery.route.stages.map((s) => s.nodeId)).not.toContain(failed);
  for (const s of recovery.route.stages) expect(live(s.nodeId)).toBe(true);
  expect(recovery.route.hops).toBe(recovery.route.stages.length - 1);
  expect(recovery.route.cost).toBeCloseTo(pipelineCost(recovery.route.stages, world.state.nodes, {}, layers), 6);
  if (recovery.strategy === 'degraded') {
    expect(recovery.degraded).toBe(true);
    expect(recovery.route.degraded).toBe(true);
    // The survivors and the missing layers together make the whole model, with no overlap.
    const pieces: Stage[] = [...recovery.route.stages, ...recovery.missingLayers.map((m) => ({ nodeId: '', ...m }))].sort((a, b) => a.layerStart - b.layerStart);
    expect(coversExactly(pieces, layers)).toBe(true);
    expect(recovery.missingLayers.length).toBeGreaterThan(0);
    const fallback = world.plan.models.find((m) => m.id === modelId)?.fallback ?? modelId;
    expect(recovery.route.modelId).toBe(fallback);
    return;
  }
  expect(recovery.degraded).toBe(false);
  expect(recovery.route.degraded).toBe(false);
  expect(recovery.route.modelId).toBe(modelId);
  expect(coversExactly(recovery.route.stages, layers)).toBe(true);
  expect(recovery.missingLayers).toEqual([]);
  if (recovery.strategy === 'copy') {
    const pipeline = world.plan.pipelines.find((p) => p.id === recovery.route.pipelineId);
    expect(pipeline?.modelId).toBe(modelId);
    expect(recovery.route.stages).toEqual(pipeline?.stages);
    // The cheapest intact copy.
    const r = resolveRequest({});
    for (const p of pipelinesOf(world.plan, modelId)) {
      if (p.stages.every((s) => live(s.nodeId))) expect(chainCost(recovery.route.stages, world.state.nodes, r)).toBeLessThanOrEqual(chainCost(p.stages, world.state.nodes, r));
    }
  }
  if (recovery.strategy === 'splice') {
    expect(recovery.route.pipelineId).toBe(lost.pipelineId);
    // Every replaced range was lost and is now served by its `to` node, which holds it in a copy.
    for (const rep of recovery.replaced) {
      expect(rep.to).not.toBe(failed);
      const served = recovery.route.stages.find((s) => s.nodeId === rep.to && s.layerStart <= rep.layerStart && rep.layerEnd <= s.layerEnd);
      expect(served).toBeDefined();
      const holds = pipelinesOf(world.plan, modelId).some((p) => p.stages.some((s) => s.nodeId === rep.to && s.layerStart <= rep.layerStart && rep.layerEnd <= s.layerEnd));
      expect(holds).toBe(true);
    }
    const replacedLayers = recovery.replaced.reduce((n, rep) => n + rep.layerEnd - rep.layerStart, 0);
    expect(replacedLayers).toBe(lostLayers(lost, layers, live).length);
  }
}

describe('routeRequest properties', () => {
  it('routes the requested model over live nodes, covering every layer, at the cheapest cost with ties by id', () => {
    let routed = 0;
    fc.assert(
      fc.property(worldArb, requestArb, fc.nat(), (world, request, pick) => {
        const model = world.plan.models[pick % world.plan.models.length] as ModelSpec;
        const r = resolveRequest(request);
        const intact = pipelinesOf(world.plan, model.id).filter((p) => p.stages.every((s) => world.state.nodes[s.nodeId]?.alive === true));
        if (intact.length === 0) {
          expect(() => routeRequest(model.id, request, world.state)).toThrow(expect.objectContaining({ code: 'NoHealthyPipeline' }));
          return;
        }
        routed++;
        const route = routeRequest(model.id, request, world.state);
        expect(route.modelId).toBe(model.id);
        expect(route.degraded).toBe(false);
        for (const s of route.stages) expect(world.state.nodes[s.nodeId]?.alive).toBe(true);
        expect(coversExactly(route.stages, model.layers)).toBe(true);
        expect(route.hops).toBe(route.stages.length - 1);
        const ranked = intact
          .map((p) => ({ id: p.id, cost: chainCost(p.stages, world.state.nodes, r) }))
          .sort((a, b) => a.cost - b.cost || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        expect(route.pipelineId).toBe(ranked[0]?.id);
        expect(route.cost).toBeCloseTo(pipelineCost(route.stages, world.state.nodes, request), 6);
        expect(routeRequest(model.id, request, world.state)).toEqual(route);
      }),
      SEEDED,
    );
    expect(routed).toBeGreaterThan(SEEDED.numRuns / 2);
  });
});

describe('failoverInSwarm properties', () => {
  it('follows intact copy → splice → degraded → Unrecoverable, and every route it returns is sound', () => {
    const seen = new Map<string, number>();
    fc.assert(
      fc.property(worldArb, fc.nat(), fc.nat(), fc.nat(), fc.boolean(), (world, pickPipeline, pickNode, pickAny, allowDegraded) => {
        const pipeline = world.plan.pipelines[pickPipeline % world.plan.pipelines.length] as Pipeline;
        const route = routeOfPipeline(pipeline, world);
        // Mostly a node of the route; sometimes any node (the unaffected case).
        const failed = pickAny % 5 === 0 ? (world.nodeIds[pickNode % world.nodeIds.length] as string) : (pipeline.stages[pickNode % pipeline.stages.length]?.nodeId as string);
        const expected = expectedStrategy(world, route, pipeline.modelId, failed, allowDegraded);
        const outcome = attempt(() => failoverInSwarm(route, failed, world.state, { allowDegraded }));
        const got = outcome === 'Unrecoverable' ? outcome : outcome.strategy;
        seen.set(got, (seen.get(got) ?? 0) + 1);
        expect(got).toBe(expected);
        if (outcome !== 'Unrecoverable') {
          checkRecovery(world, route, pipeline.modelId, failed, outcome);
          expect(failoverInSwarm(route, failed, world.state, { allowDegraded })).toEqual(outcome);
        }
      }),
      { ...SEEDED, numRuns: 400 },
    );
    // The generator reaches every branch, so no rule is checked vacuously.
    for (const strategy of ['unaffected', 'copy', 'splice', 'degraded', 'Unrecoverable']) expect(seen.get(strategy) ?? 0).toBeGreaterThan(5);
  });

  it('recovers a recovered route again after a second failure, by the same rules', () => {
    let chained = 0;
    fc.assert(
      fc.property(worldArb, fc.nat(), fc.nat(), fc.nat(), (world, pickPipeline, pickFirst, pickSecond) => {
        const pipeline = world.plan.pipelines[pickPipeline % world.plan.pipelines.length] as Pipeline;
        const first = pipeline.stages[pickFirst % pipeline.stages.length]?.nodeId as string;
        const one = attempt(() => failoverInSwarm(routeOfPipeline(pipeline, world), first, world.state, { allowDegraded: true }));
        if (one === 'Unrecoverable' || one.route.stages.length === 0) return;
        // The runtime marks the first node down before the next failure.
        const after: World = { ...world, state: world.state.withNode(first, { alive: false }) };
        const second = one.route.stages[pickSecond % one.route.stages.length]?.nodeId as string;
        const expected = expectedStrategy(after, one.route, pipeline.modelId, second, true);
        const two = attempt(() => failoverInSwarm(one.route, second, after.state, { allowDegraded: true }));
        expect(two === 'Unrecoverable' ? two : two.strategy).toBe(expected);
        if (two !== 'Unrecoverable') checkRecovery(after, one.route, pipeline.modelId, second, two);
        chained++;
      }),
      SEEDED,
    );
    expect(chained).toBeGreaterThan(SEEDED.numRuns / 2);
  });
});

describe('planSwarm properties', () => {
  const profilesArb: fc.Arbitrary<NodeProfile[]> = fc
    .array(
      fc.record(
        { memoryGb: fc.integer({ min: 0, max: 24 }), score: fc.constantFrom(0.5, 1, 2, 3, 8), latencyMs: fc.integer({ min: 0, max: 50 }) },
        { requiredKeys: ['memoryGb'] },
      ),
      { minLength: 1, maxLength: 7 },
    )
    .map((list) => list.map((p, i) => ({ id: `node-${i}`, ...p })));
  const modelsArb: fc.Arbitrary<ModelSpec[]> = fc
    .array(fc.record({ layers: fc.integer({ min: 1, max: 12 }), pipelines: fc.integer({ min: 1, max: 3 }), layerGb: fc.constantFrom(0.5, 1, 2) }), { minLength: 1, maxLength: 3 })
    .map((list) => list.map((m, i) => ({ id: `model-${i}`, ...m })));

  it('always returns a plan that passes validatePlan, with copies on disjoint nodes, or a PlanError', () => {
    let planned = 0;
    fc.assert(
      fc.property(profilesArb, modelsArb, (profiles, models) => {
        let plan: SwarmPlan;
        try {
          plan = planSwarm(profiles, { models });
        } catch (e) {
          expect(e).toBeInstanceOf(PlanError);
          expect((e as PlanError).code).toBe('InsufficientCapacity');
          return;
        }
        planned++;
        expect(validatePlan(plan, profiles)).toEqual([]);
        for (const m of models) {
          const copies = pipelinesOf(plan, m.id);
          // `pipelines` is a minimum: nodes left over may form further copies.
          expect(copies.length).toBeGreaterThanOrEqual(m.pipelines ?? 1);
          const nodes = copies.flatMap((p) => [...new Set(p.stages.map((s) => s.nodeId))]);
          expect(new Set(nodes).size).toBe(nodes.length);
        }
        // A fresh state over it routes every model.
        const state = SwarmState.fromProfiles(plan, profiles);
        for (const m of models) expect(routeRequest(m.id, {}, state).modelId).toBe(m.id);
      }),
      SEEDED,
    );
    expect(planned).toBeGreaterThan(SEEDED.numRuns / 4);
  });

  it('gives deep-equal plans for the same inputs', () => {
    fc.assert(
      fc.property(profilesArb, modelsArb, (profiles, models) => {
        const run = () => {
          try {
            return planSwarm(profiles, { models });
          } catch (e) {
            return (e as Error).message;
          }
        };
        expect(run()).toEqual(run());
      }),
      { ...SEEDED, numRuns: 100 },
    );
  });
});
