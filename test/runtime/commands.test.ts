import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createSwarm,
  RoutingError,
  SwarmError,
  validatePlan,
  type NodeProfile,
  type Swarm,
  type SwarmConfig,
  type SwarmStatus,
} from '../../src/index.js';

/**
 * fast-check model test: random sequences of markDown / markAlive / addNode / removeNode /
 * report / route against a simple model of who is a member and who is alive. After every step:
 * the status is what the alive set implies, no route uses a dead node, the plan validates, and
 * no node or pipeline disappears unless an operation reported it.
 */

interface Model {
  members: Map<string, NodeProfile>;
  alive: Map<string, boolean>;
}

const baseProfiles: NodeProfile[] = [
  { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 4 },
  { id: 'desktop', memoryGb: 16, score: 5, latencyMs: 6 },
  { id: 'laptop', memoryGb: 12, score: 3, latencyMs: 9 },
  { id: 'mini', memoryGb: 12, score: 2, latencyMs: 8 },
  { id: 'phone', memoryGb: 4, score: 0.5, latencyMs: 30 },
];
const config: SwarmConfig = {
  models: [
    { id: 'base', layers: 12, pipelines: 2, fallback: 'tiny' },
    { id: 'coder', layers: 6, kind: 'expert' },
    { id: 'tiny', layers: 2, kind: 'expert' },
  ],
};
const pool = ['gpu', 'desktop', 'laptop', 'mini', 'phone', 'new-a', 'new-b', 'new-c', 'ghost'];

/**
 * The same walks under ids named after built-in object properties (`__proto__` included), and
 * unicode: every string id must behave exactly like an ordinary one.
 */
const HOSTILE: Readonly<Record<string, string>> = {
  gpu: 'constructor',
  desktop: 'toString',
  laptop: 'hasOwnProperty',
  mini: 'valueOf',
  phone: 'nœud-é 🚀',
  'new-a': '__lookupGetter__',
  'new-b': 'isPrototypeOf',
  'new-c': '__proto__',
  ghost: 'propertyIsEnumerable',
};

function expectedStatus(swarm: Swarm, m: Model): SwarmStatus {
  const aliveCount = [...m.alive.values()].filter(Boolean).length;
  if (aliveCount === 0) return 'failed';
  const planNodes = swarm.state().plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId));
  return planNodes.every((id) => m.alive.get(id) === true) ? 'healthy' : 'degraded';
}

function check(swarm: Swarm, m: Model, pipelinesBefore: Set<string>, accounted: Set<string>): void {
  const state = swarm.state();
  expect(swarm.status()).toBe(expectedStatus(swarm, m));
  expect(Object.keys(state.nodes).sort()).toEqual([...m.members.keys()].sort());
  for (const [id, alive] of m.alive) expect(state.nodes[id]?.alive).toBe(alive);
  expect(validatePlan(state.plan, [...m.members.values()])).toEqual([]);
  const after = new Set(state.plan.pipelines.map((p) => p.id));
  for (const id of pipelinesBefore) if (!after.has(id)) expect(accounted).toContain(id);
}

function expectRouteOk(swarm: Swarm, m: Model, model?: string): void {
  try {
    const route = swarm.route(model === undefined ? {} : { model });
    for (const s of route.stages) expect(m.alive.get(s.nodeId)).toBe(true);
    if (!route.degraded) {
      const layers = config.models.find((x) => x.id === route.modelId)?.layers;
      let next = 0;
      for (const s of route.stages) {
        expect(s.layerStart).toBe(next);
        next = s.layerEnd;
      }
      expect(next).toBe(layers);
      expect(route.modelId).toBe(model ?? 'base');
    }
  } catch (error) {
    expect(error).toBeInstanceOf(RoutingError);
    expect((error as RoutingError).code).toBe('NoHealthyPipeline');
  }
}

type Cmd = fc.Command<Model, Swarm>;

function step(name: string, run: (m: Model, s: Swarm) => Set<string>): Cmd {
  return {
    check: () => true,
    run(m, s) {
      const before = new Set(s.state().plan.pipelines.map((p) => p.id));
      const accounted = run(m, s);
      check(s, m, before, accounted);
    },
    toString: () => name,
  };
}

function expectSwarmError(fn: () => unknown, code: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(SwarmError);
  expect((caught as SwarmError).code).toBe(code);
}

function commandsOver(pool: readonly string[]): fc.Arbitrary<Cmd>[] {
const id = fc.constantFrom(...pool);
return [
  id.map((nodeId) =>
    step(`markDown(${nodeId})`, (m, s) => {
      if (!m.members.has(nodeId)) {
        expectSwarmError(() => s.markDown(nodeId), 'UnknownNode');
        return new Set();
      }
      const rescue = s.markDown(nodeId);
      for (const r of rescue.recoveries) {
        expect(r.from.stages.map((x) => x.nodeId)).toContain(nodeId);
        expect(r.route.stages.map((x) => x.nodeId)).not.toContain(nodeId);
      }
      m.alive.set(nodeId, false);
      return new Set();
    }),
  ),
  id.map((nodeId) =>
    step(`markAlive(${nodeId})`, (m, s) => {
      if (!m.members.has(nodeId)) {
        expectSwarmError(() => s.markAlive(nodeId), 'UnknownNode');
        return new Set();
      }
      s.markAlive(nodeId);
      m.alive.set(nodeId, true);
      return new Set();
    }),
  ),
  fc.record({ id, memoryGb: fc.integer({ min: 1, max: 30 }), score: fc.double({ min: 0.2, max: 12, noNaN: true }) }).map((p) =>
    step(`addNode(${JSON.stringify(p)})`, (m, s) => {
      if (m.members.has(p.id)) {
        expectSwarmError(() => s.addNode(p), 'DuplicateNode');
        return new Set();
      }
      const growth = s.addNode(p);
      expect(['restore', 'copy', 'expert', 'spare']).toContain(growth.role);
      m.members.set(p.id, p);
      m.alive.set(p.id, true);
      return new Set(growth.replaced);
    }),
  ),
  id.map((nodeId) =>
    step(`removeNode(${nodeId})`, (m, s) => {
      if (!m.members.has(nodeId)) {
        expectSwarmError(() => s.removeNode(nodeId), 'UnknownNode');
        return new Set();
      }
      const retirement = s.removeNode(nodeId);
      m.members.delete(nodeId);
      m.alive.delete(nodeId);
      expect(s.state().plan.pipelines.flatMap((p) => p.stages.map((x) => x.nodeId))).not.toContain(nodeId);
      return new Set(retirement.dropped);
    }),
  ),
  fc
    .tuple(id, fc.oneof(fc.double({ min: 0, max: 2, noNaN: true }), fc.constantFrom(Number.NaN, -1, Number.POSITIVE_INFINITY)), fc.double({ min: 0, max: 50, noNaN: true }))
    .map(([nodeId, load, latencyMs]) =>
      step(`report(${nodeId}, ${load}, ${latencyMs})`, (m, s) => {
        if (!m.members.has(nodeId)) {
          expectSwarmError(() => s.report(nodeId, { load, latencyMs }), 'UnknownNode');
          return new Set();
        }
        const before = s.state().nodes[nodeId];
        if (!(Number.isFinite(load) && load >= 0)) {
          expectSwarmError(() => s.report(nodeId, { load, latencyMs }), 'BadTelemetry');
          expect(s.state().nodes[nodeId]).toEqual(before);
          return new Set();
        }
        s.report(nodeId, { load, latencyMs });
        return new Set();
      }),
    ),
  fc.constantFrom(undefined, 'base', 'coder', 'tiny').map((model) =>
    step(`route(${model ?? 'default'})`, (m, s) => {
      expectRouteOk(s, m, model);
      return new Set();
    }),
  ),
];
}

describe('Swarm (fc.commands model test)', () => {
  const walk = (ids: (id: string) => string, numRuns: number, seed: number) => {
    const profiles = baseProfiles.map((p) => ({ ...p, id: ids(p.id) }));
    const commands = commandsOver(pool.map(ids));
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 40 }), (cmds) => {
        const swarm = createSwarm(profiles, config, { seed: 7 });
        const model: Model = {
          members: new Map(profiles.map((p) => [p.id, p])),
          alive: new Map(profiles.map((p) => [p.id, true])),
        };
        try {
          fc.modelRun(() => ({ model, real: swarm }), cmds);
        } finally {
          swarm.stop();
        }
      }),
      { seed, numRuns },
    );
  };

  it('keeps status, routes, plan and membership consistent over random operation sequences', () => {
    walk((id) => id, 150, 20261202);
  });

  it('behaves the same with ids such as __proto__, constructor, toString, __lookupGetter__ and unicode', () => {
    walk((id) => HOSTILE[id] ?? id, 60, 20261203);
  });
});
