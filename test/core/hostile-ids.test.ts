/**
 * Any string id behaves exactly like `a` (docs/inputs.md): ids named after built-in object
 * properties (`__proto__`, `constructor`, `toString`, ...) and unicode ids give the same plans,
 * routes, recoveries and issues as ordinary ids. Metamorphic properties: a generated swarm is
 * renamed with an order-preserving bijection onto hostile ids (order matters: ties break by id),
 * run through the core, and the results renamed back must equal the original run's, to the bit.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { failoverInSwarm, PlanError, planSwarm, routeRequest, RoutingError, SwarmError, SwarmState, validatePlan } from '../../src/index.js';
import type { ModelSpec, NodeProfile, NodeTelemetry, SwarmPlan } from '../../src/index.js';
import { SEEDED, worldArb, type World } from './fixtures.js';

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Node ids a plain object would mistake for its own members, and unicode ones. */
const HOSTILE_NODES = [
  '__proto__',
  'constructor',
  'hasOwnProperty',
  'toString',
  'valueOf',
  'isPrototypeOf',
  '__defineGetter__',
  'propertyIsEnumerable',
  'toLocaleString',
  'ñodo',
  '节点',
  '🙂 node',
].sort(byCodeUnits);
// Disjoint from the node ids, so that renaming back is unambiguous.
const HOSTILE_MODELS = ['__lookupGetter__', 'toJSON'].sort(byCodeUnits);

/** An order-preserving bijection from `ids` onto `hostile` (ties in the code break by id order). */
function bijection(ids: readonly string[], hostile: readonly string[]): Map<string, string> {
  const sorted = [...ids].sort(byCodeUnits);
  if (sorted.length > hostile.length) throw new Error('not enough hostile ids');
  return new Map(sorted.map((id, i) => [id, hostile[i] as string]));
}

interface Renaming {
  readonly to: ReadonlyMap<string, string>;
  readonly back: ReadonlyMap<string, string>;
}

function renamingOf(plan: SwarmPlan, nodeIds: readonly string[]): Renaming {
  const to = new Map([...bijection(nodeIds, HOSTILE_NODES), ...bijection(plan.models.map((m) => m.id), HOSTILE_MODELS)]);
  for (const p of plan.pipelines) to.set(p.id, p.id.replace(/^[^/]+/, (m) => to.get(m) ?? m));
  return { to, back: new Map([...to].map(([a, b]) => [b, a])) };
}

const renameId = (map: ReadonlyMap<string, string>, id: string): string => map.get(id) ?? id;

function renamePlan(plan: SwarmPlan, r: Renaming): SwarmPlan {
  const id = (x: string) => renameId(r.to, x);
  return {
    models: plan.models.map((m): ModelSpec => ({ ...m, id: id(m.id), ...(m.fallback === undefined ? {} : { fallback: id(m.fallback) }) })),
    pipelines: plan.pipelines.map((p) => ({ id: id(p.id), modelId: id(p.modelId), stages: p.stages.map((s) => ({ ...s, nodeId: id(s.nodeId) })) })),
  };
}

function renameWorld(world: World, r: Renaming): SwarmState {
  let state = SwarmState.fromPlan(renamePlan(world.plan, r));
  for (const [id, t] of Object.entries(world.state.nodes)) state = state.withNode(renameId(r.to, id), t);
  return state;
}

/** Every string in `value` that is a renamed id, renamed back (keys too). */
function back(value: unknown, r: Renaming): unknown {
  if (typeof value === 'string') return renameId(r.back, value);
  if (Array.isArray(value)) return value.map((v) => back(v, r));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, renameId(r.back, k), { value: back(v, r), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

/** The outcome of `f` as plain data: its result, or its error's class and code. */
function outcome(f: () => unknown): unknown {
  try {
    return { ok: JSON.parse(JSON.stringify(f())) as unknown };
  } catch (error) {
    if (error instanceof RoutingError || error instanceof SwarmError || error instanceof PlanError) return { error: error.name, code: error.code };
    throw error;
  }
}

describe('hostile ids behave like any other id', () => {
  it('routeRequest: the same route, cost to the bit, for every model', () => {
    fc.assert(
      fc.property(worldArb, fc.integer({ min: 0, max: 4096 }), (world, tokens) => {
        const r = renamingOf(world.plan, world.nodeIds);
        const hostile = renameWorld(world, r);
        for (const m of world.plan.models) {
          const expected = outcome(() => routeRequest(m.id, { tokens }, world.state));
          const actual = outcome(() => routeRequest(renameId(r.to, m.id), { tokens }, hostile));
          expect(back(actual, r)).toEqual(expected);
        }
      }),
      SEEDED,
    );
  });

  it('failoverInSwarm: the same recovery for every failed node of every pipeline', () => {
    fc.assert(
      fc.property(worldArb, fc.boolean(), (world, allowDegraded) => {
        const r = renamingOf(world.plan, world.nodeIds);
        const hostile = renameWorld(world, r);
        for (const p of world.plan.pipelines) {
          const route = { modelId: p.modelId, pipelineId: p.id, stages: p.stages, cost: 0, hops: p.stages.length - 1, degraded: false };
          const renamedRoute = back(route, { to: r.back, back: r.to }) as typeof route;
          for (const s of p.stages) {
            const expected = outcome(() => failoverInSwarm(route, s.nodeId, world.state, { allowDegraded }));
            const actual = outcome(() => failoverInSwarm(renamedRoute, renameId(r.to, s.nodeId), hostile, { allowDegraded }));
            expect(back(actual, r)).toEqual(expected);
          }
        }
      }),
      SEEDED,
    );
  });

  it('SwarmState: a null-prototype table; every node patchable, no inherited member a node; JSON round trip', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const r = renamingOf(world.plan, world.nodeIds);
        const hostile = renameWorld(world, r);
        expect(Object.getPrototypeOf(hostile.nodes)).toBe(null);
        expect(back(hostile.nodes, r)).toEqual(JSON.parse(JSON.stringify(world.state.nodes)));
        for (const id of Object.keys(hostile.nodes)) expect(hostile.withNode(id, { load: 0.25 }).nodes[id]?.load).toBe(0.25);
        for (const inherited of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf']) {
          if (Object.hasOwn(hostile.nodes, inherited)) continue;
          expect(() => hostile.withNode(inherited, { alive: false })).toThrow(expect.objectContaining({ code: 'UnknownNode' }));
        }
        const again = SwarmState.from(JSON.parse(JSON.stringify(hostile)));
        expect(JSON.parse(JSON.stringify(again))).toEqual(JSON.parse(JSON.stringify(hostile)));
      }),
      SEEDED,
    );
  });

  it('withNode("constructor") on a state without such a node is UnknownNode, not a new node', () => {
    const state = SwarmState.fromPlan({ models: [{ id: 'm', layers: 2 }], pipelines: [{ id: 'm/0', modelId: 'm', stages: [{ nodeId: 'a', layerStart: 0, layerEnd: 2 }] }] });
    for (const id of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(() => state.withNode(id, { alive: false })).toThrow(expect.objectContaining({ code: 'UnknownNode' }));
    }
    expect(() => state.withNode(Symbol('a') as unknown as string, { alive: false })).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
  });

  it('planSwarm and validatePlan: the same plan and the same issues', () => {
    const profileArb = fc.array(fc.record({ memoryGb: fc.integer({ min: 0, max: 24 }), score: fc.constantFrom(0.5, 1, 2, 5) }), { minLength: 1, maxLength: 8 });
    const modelArb = fc.array(fc.record({ layers: fc.integer({ min: 1, max: 16 }), pipelines: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 2 });
    fc.assert(
      fc.property(profileArb, modelArb, (shapes, modelShapes) => {
        const profiles: NodeProfile[] = shapes.map((s, i) => ({ id: `n${i}`, ...s }));
        const models: ModelSpec[] = modelShapes.map((m, i) => ({ id: `m${i}`, ...m }));
        const to = new Map([...bijection(profiles.map((p) => p.id), HOSTILE_NODES), ...bijection(models.map((m) => m.id), HOSTILE_MODELS)]);
        const r: Renaming = { to, back: new Map([...to].map(([a, b]) => [b, a])) };
        const hostileProfiles = profiles.map((p) => ({ ...p, id: renameId(to, p.id) }));
        const hostileModels = models.map((m) => ({ ...m, id: renameId(to, m.id) }));
        const expected = outcome(() => planSwarm(profiles, { models }));
        const actual = outcome(() => planSwarm(hostileProfiles, { models: hostileModels }));
        // Pipeline ids are `<model>/<copy>`: rename the model part back.
        const fix = (v: unknown): unknown => JSON.parse(JSON.stringify(v).replace(/"(__lookupGetter__|toJSON)\/(\d+)"/g, (_, m: string, c: string) => `"${renameId(r.back, m)}/${c}"`));
        expect(back(fix(actual), r)).toEqual(expected);
        if ('ok' in (expected as object)) {
          const plan = (actual as { ok: SwarmPlan }).ok;
          expect(validatePlan(plan, hostileProfiles)).toEqual([]);
          const broken = { ...plan, pipelines: plan.pipelines.map((p) => ({ ...p, stages: p.stages.slice(1) })) };
          const original = (expected as { ok: SwarmPlan }).ok;
          const brokenOriginal = { ...original, pipelines: original.pipelines.map((p) => ({ ...p, stages: p.stages.slice(1) })) };
          expect(validatePlan(broken, hostileProfiles).map((i) => i.code)).toEqual(validatePlan(brokenOriginal, profiles).map((i) => i.code));
        }
      }),
      SEEDED,
    );
  });

  it('telemetry handed in as an ordinary object (JSON.parse) counts own properties only', () => {
    const plan: SwarmPlan = {
      models: [{ id: 'm', layers: 2, pipelines: 2 }],
      pipelines: [
        { id: 'm/0', modelId: 'm', stages: [{ nodeId: 'toString', layerStart: 0, layerEnd: 2 }] },
        { id: 'm/1', modelId: 'm', stages: [{ nodeId: 'a', layerStart: 0, layerEnd: 2 }] },
      ],
    };
    const nodes = JSON.parse('{"toString":{"alive":true,"samples":1,"latencyMs":5,"load":0.1},"a":{"alive":true,"samples":1,"latencyMs":5,"load":0.9}}') as Record<string, NodeTelemetry>;
    const route = routeRequest('m', {}, { plan, nodes });
    expect(route.pipelineId).toBe('m/0');
    expect(Number.isFinite(route.cost)).toBe(true);
    // A node with no telemetry is not alive just because Object.prototype has a member of its name.
    const cold = JSON.parse('{"a":{"alive":true,"samples":0}}') as Record<string, NodeTelemetry>;
    expect(routeRequest('m', {}, { plan, nodes: cold }).pipelineId).toBe('m/1');
  });
});
