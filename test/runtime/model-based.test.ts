import { adjacencyMapToArray, getAdjacencyMap } from '@xstate/graph';
import { afterAll, describe, expect, it } from 'vitest';
import { initialTransition, type AnyStateMachine, type SnapshotFrom } from 'xstate';
import { aliveRecord } from '../../machines/swarm.machine.js';
import { createSwarm, planSwarm, swarmMachine, SwarmState, type NodeProfile, type SwarmConfig, type SwarmEvent } from '../../src/index.js';

/**
 * Model-based tests: paths generated from the Swarm statechart with @xstate/graph, each run
 * against the real runtime (createSwarm), never against a second copy of the logic.
 */

type Snap = SnapshotFrom<typeof swarmMachine>;

interface Topology {
  readonly name: string;
  readonly profiles: readonly NodeProfile[];
  readonly config: SwarmConfig;
}

const topologies: Topology[] = [
  {
    // One copy on the gpu; the phone is too slow to get a layer and waits as a spare, so the
    // plan can lose every node (healthy → failed) while a spare is down first.
    name: 'gpu + spare phone',
    profiles: [
      { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 4 },
      { id: 'phone', memoryGb: 4, score: 0.5, latencyMs: 30 },
    ],
    config: { models: [{ id: 'base', layers: 12 }] },
  },
  {
    name: 'two copies on three nodes',
    profiles: [
      { id: 'gpu', memoryGb: 12, score: 10, latencyMs: 4 },
      { id: 'desktop', memoryGb: 8, score: 4, latencyMs: 6 },
      { id: 'laptop', memoryGb: 8, score: 4, latencyMs: 9 },
    ],
    config: { models: [{ id: 'base', layers: 12, pipelines: 2 }] },
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

const covered = new Set<string>();

/** Bounded: the status and who is alive; EWMAs, plans and rescues stay out of the key. */
function serialize(s: Snap): string {
  const mirror = aliveRecord(s.context);
  const alive = Object.keys(mirror).sort().map((id) => `${id}:${mirror[id] ? 1 : 0}`);
  return `${String(s.value)}|${alive.join(',')}`;
}

/** For every edge of the statechart's state graph that changes status: the shortest path to its source plus that edge. */
function statusChangingPaths(t: Topology): { label: string; events: SwarmEvent[]; states: string[] }[] {
  const plan = planSwarm(t.profiles, t.config);
  const input = { plan, profiles: t.profiles, telemetry: SwarmState.fromProfiles(plan, t.profiles).nodes };
  const [initial] = initialTransition(swarmMachine, input);
  const events: SwarmEvent[] = [
    ...t.profiles.flatMap((p) => [
      { type: 'node.down', nodeId: p.id } as const,
      { type: 'node.alive', nodeId: p.id } as const,
    ]),
    { type: 'swarm.stop' },
  ];
  // Cast: @xstate/graph's ActorLogic type does not admit a machine with typed emitted events.
  const adjacency = getAdjacencyMap(swarmMachine as AnyStateMachine, {
    fromState: initial,
    events,
    serializeState: (s) => serialize(s as Snap),
    stopWhen: (s) => s.status !== 'active',
  });
  // Shortest event sequence to every serialized state (BFS over the adjacency map).
  const start = serialize(initial);
  const pathTo = new Map<string, { events: SwarmEvent[]; states: string[] }>([[start, { events: [], states: [] }]]);
  const queue = [start];
  while (queue.length > 0) {
    const key = queue.shift() as string;
    const here = pathTo.get(key) as { events: SwarmEvent[]; states: string[] };
    for (const { event, state } of Object.values(adjacency[key as keyof typeof adjacency]?.transitions ?? {})) {
      const next = serialize(state as Snap);
      if (pathTo.has(next)) continue;
      pathTo.set(next, { events: [...here.events, event as SwarmEvent], states: [...here.states, String((state as Snap).value)] });
      queue.push(next);
    }
  }
  const paths: { label: string; events: SwarmEvent[]; states: string[] }[] = [];
  for (const edge of adjacencyMapToArray(adjacency)) {
    const from = edge.state as Snap;
    const to = edge.nextState as Snap;
    if (from.value === to.value) continue;
    const prefix = pathTo.get(serialize(from));
    if (prefix === undefined) continue;
    paths.push({
      label: `${String(from.value)}→${String(to.value)}`,
      events: [...prefix.events, edge.event as SwarmEvent],
      states: [...prefix.states, String(to.value)],
    });
  }
  return paths;
}

describe('Swarm statechart, model-based', () => {
  for (const t of topologies) {
    const paths = statusChangingPaths(t);
    it(`generates status-changing paths for ${t.name}`, () => {
      expect(paths.length).toBeGreaterThan(0);
    });
    for (const path of paths) {
      const name = path.events.map((e) => ('nodeId' in e ? `${e.type}(${e.nodeId})` : e.type)).join(' → ');
      it(`${t.name}: ${path.label} via ${name}`, () => {
        const swarm = createSwarm(t.profiles, t.config, { seed: 1 });
        const planNodes = new Set(swarm.state().plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
        const alive = new Map(t.profiles.map((p) => [p.id, true]));
        let stopped = false;
        // docs/design.md §7, independently of the machine: failed ⇔ zero alive; degraded ⇔ a plan node down.
        const expected = () => {
          if (stopped) return 'stopped';
          if (![...alive.values()].some(Boolean)) return 'failed';
          return [...planNodes].every((id) => alive.get(id)) ? 'healthy' : 'degraded';
        };
        path.events.forEach((event, i) => {
          if (event.type === 'node.down') alive.set(event.nodeId, false);
          if (event.type === 'node.alive') alive.set(event.nodeId, true);
          if (event.type === 'swarm.stop') stopped = true;
          if (event.type === 'node.down') {
            const before = swarm.state();
            const rescue = swarm.markDown(event.nodeId);
            for (const recovery of rescue.recoveries) {
              expect(recovery.from.stages.map((s) => s.nodeId)).toContain(event.nodeId);
              expect(recovery.route.stages.map((s) => s.nodeId)).not.toContain(event.nodeId);
            }
            // The rescue was computed from the state before the mark: the node was alive then.
            expect(before.nodes[event.nodeId]?.alive).toBe(true);
            expect(swarm.state().nodes[event.nodeId]?.alive).toBe(false);
          } else if (event.type === 'node.alive') {
            swarm.markAlive(event.nodeId);
          } else if (event.type === 'swarm.stop') {
            swarm.stop();
          }
          expect(swarm.status()).toBe(path.states[i]);
          expect(swarm.status()).toBe(expected());
        });
        covered.add(path.label);
        swarm.stop();
      });
    }
  }

  afterAll(() => {
    const n = ALL.filter((l) => covered.has(l)).length;
    console.log(`status transitions covered: ${n}/${ALL.length}`);
  });

  it('covers every status transition (9/9)', () => {
    // Runs last in this file: the generated paths above have filled `covered`.
    const missing = ALL.filter((l) => !covered.has(l));
    expect(missing).toEqual([]);
  });
});
