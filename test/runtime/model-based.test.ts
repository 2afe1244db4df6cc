import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createSwarm, type NodeProfile, type Swarm, type SwarmConfig } from '../../src/index.js';
import { runSwarmPath, swarmTestModel, type SwarmLike, type SwarmPath, type SwarmTestModelOptions } from '../../src/testing/index.js';

/**
 * Model-based tests: paths generated from the Swarm statechart by `hecate-swarm/testing`
 * (`swarmTestModel`, an @xstate/graph TestModel), each run against the real runtime
 * (`createSwarm`) by `runSwarmPath`, which checks the status after every step. The runtime is
 * also checked against docs/design.md §7 directly, independently of the statechart.
 */

interface Topology {
  readonly name: string;
  readonly profiles: readonly NodeProfile[];
  readonly config: SwarmConfig;
  readonly options?: SwarmTestModelOptions;
}

const example = JSON.parse(readFileSync(new URL('../../examples/swarm.json', import.meta.url), 'utf8')) as { models: SwarmConfig['models']; nodes: NodeProfile[] };

/** Ids named after built-in object properties, and unicode: they must behave like any other id. */
const hostile = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'nœud-é 🚀'];

const topologies: Topology[] = [
  { name: 'the README example (examples/swarm.json)', profiles: example.nodes, config: { models: example.models } },
  {
    // One copy on the gpu; the phone is too slow to get a layer and waits as a spare.
    name: 'gpu + spare phone, a newcomer',
    profiles: [
      { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 4 },
      { id: 'phone', memoryGb: 4, score: 0.5, latencyMs: 30 },
    ],
    config: { models: [{ id: 'base', layers: 12 }] },
    options: { newcomers: [{ id: 'newcomer', memoryGb: 16, score: 4, latencyMs: 6 }] },
  },
  {
    name: 'two copies on three nodes with hostile ids, two newcomers',
    profiles: [
      { id: hostile[0] as string, memoryGb: 12, score: 10, latencyMs: 4 },
      { id: hostile[1] as string, memoryGb: 8, score: 4, latencyMs: 6 },
      { id: hostile[2] as string, memoryGb: 8, score: 4, latencyMs: 9 },
    ],
    config: { models: [{ id: 'base', layers: 12, pipelines: 2 }] },
    options: {
      newcomers: [
        { id: hostile[3] as string, memoryGb: 8, score: 2, latencyMs: 7 },
        { id: hostile[4] as string, memoryGb: 6, score: 1, latencyMs: 5 },
      ],
    },
  },
];

const ALL = [
  'healthy→degraded',
  'healthy→failed',
  'degraded→healthy',
  'degraded→failed',
  'failed→degraded',
  'failed→healthy',
  'healthy→stopped',
  'degraded→stopped',
  'failed→stopped',
] as const;

/** The status transitions a set of paths takes. */
function transitionsOf(paths: readonly SwarmPath[]): Set<string> {
  const seen = new Set<string>();
  for (const path of paths) {
    for (let i = 1; i < path.steps.length; i++) {
      const from = String(path.steps[i - 1]?.state.value);
      const to = String(path.steps[i]?.state.value);
      if (from !== to) seen.add(`${from}→${to}`);
    }
  }
  return seen;
}

/**
 * The real Swarm behind the SwarmLike methods, checked after every call against docs/design.md
 * §7 on its own (failed ⇔ zero alive; degraded ⇔ a node of the current plan down) and every
 * rescue against the route it took before the mark.
 */
function checked(swarm: Swarm, profiles: readonly NodeProfile[]): SwarmLike {
  const alive = new Map(profiles.map((p) => [p.id, true]));
  let stopped = false;
  const check = () => {
    const planNodes = new Set(swarm.state().plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
    const expected = stopped ? 'stopped' : ![...alive.values()].some(Boolean) ? 'failed' : [...planNodes].every((id) => alive.get(id) === true) ? 'healthy' : 'degraded';
    expect(swarm.status()).toBe(expected);
  };
  return {
    markDown(nodeId) {
      const rescue = swarm.markDown(nodeId);
      for (const recovery of rescue.recoveries) {
        expect(recovery.from.stages.map((s) => s.nodeId)).toContain(nodeId);
        expect(recovery.route.stages.map((s) => s.nodeId)).not.toContain(nodeId);
      }
      alive.set(nodeId, false);
      check();
    },
    markAlive(nodeId) {
      swarm.markAlive(nodeId);
      alive.set(nodeId, true);
      check();
    },
    addNode(profile) {
      swarm.addNode(profile);
      alive.set(profile.id, true);
      check();
    },
    removeNode(nodeId) {
      swarm.removeNode(nodeId);
      alive.delete(nodeId);
      check();
    },
    stop() {
      swarm.stop();
      stopped = true;
      check();
    },
    status: () => swarm.status(),
  };
}

describe('Swarm statechart, model-based (hecate-swarm/testing)', () => {
  for (const t of topologies) {
    const paths = swarmTestModel(t.profiles, t.config, t.options).getShortestPaths();

    it(`${t.name}: the shortest paths cover all 9 status transitions`, () => {
      const covered = transitionsOf(paths);
      console.log(`${t.name}: status transitions covered: ${ALL.filter((l) => covered.has(l)).length}/${ALL.length}`);
      expect(ALL.filter((l) => !covered.has(l))).toEqual([]);
    });

    it(`${t.name}: the runtime follows every one of the ${paths.length} shortest paths`, () => {
      expect(paths.length).toBeGreaterThan(20);
      for (const path of paths) {
        const swarm = createSwarm(t.profiles, t.config, { seed: 1 });
        try {
          runSwarmPath(path, checked(swarm, t.profiles));
        } finally {
          swarm.stop();
        }
      }
    });
  }

  it('carries complete events: every node.added has its profile', () => {
    const t = topologies[1] as Topology;
    const added = swarmTestModel(t.profiles, t.config, t.options)
      .getShortestPaths()
      .flatMap((p) => p.steps.map((s) => s.event))
      .filter((e) => e.type === 'node.added');
    expect(added.length).toBeGreaterThan(0);
    for (const e of added) expect(e).toMatchObject({ type: 'node.added', profile: { id: 'newcomer', memoryGb: 16 } });
  });

  it('reports a runtime whose status departs from the statechart, naming the step', () => {
    const t = topologies[1] as Topology;
    const path = swarmTestModel(t.profiles, t.config, t.options)
      .getShortestPaths()
      .find((p) => p.steps.some((s) => s.event.type === 'node.down'));
    expect(path).toBeDefined();
    const swarm = createSwarm(t.profiles, t.config, { seed: 1 });
    // A runtime that ignores markDown: its status stays healthy.
    const broken: SwarmLike = { ...checked(swarm, t.profiles), markDown: () => undefined, status: () => swarm.status() };
    expect(() => runSwarmPath(path as SwarmPath, broken)).toThrow(/node\.down\((gpu|phone)\).*status "healthy", the statechart says "(degraded|failed)"/);
    swarm.stop();
  });
});
