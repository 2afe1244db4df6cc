import { adjacencyMapToArray, getAdjacencyMap } from '@xstate/graph';
import { afterAll, describe, expect, it } from 'vitest';
import { createActor, initialTransition, type AnyStateMachine, type InspectionEvent, type SnapshotFrom } from 'xstate';
import { nodeMachine, type NodeEvent } from '../../machines/node.machine.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { guardName, machineChart, type ChartTransition } from '../../src/sim/chart.js';

/**
 * Model-based tests of the node statechart: paths generated with @xstate/graph over the pure
 * machine (delayed transitions stand as their `xstate.after.*` events), each run against a real
 * node actor on a ManualClock, where a delayed event is the clock advancing to the next timer.
 */

type Snap = SnapshotFrom<typeof nodeMachine>;
type ModelEvent = NodeEvent | { readonly type: `xstate.after.${string}` };

const AFTER = {
  suspect: 'xstate.after.suspectAfter.node.watching',
  down: 'xstate.after.downAfter.node.suspect',
  ban: 'xstate.after.banAfter.node.down.ejected',
} as const;

const events: ModelEvent[] = [
  { type: 'node.heartbeat', at: 0 },
  { type: 'node.seen', at: 0 },
  { type: 'node.outcome', ok: true },
  { type: 'node.outcome', ok: false },
  { type: 'node.down' },
  { type: 'node.down', cause: 'ejected' },
  { type: 'node.down', cause: 'detector' },
  { type: 'node.down', cause: 'integrity' },
  { type: 'node.alive' },
  { type: 'node.telemetry', sample: { load: 0.5 } },
  { type: 'node.retire' },
  { type: AFTER.suspect },
  { type: AFTER.down },
  { type: AFTER.ban },
];

/** Bounded: the state and the small counters; the history, timestamps and EWMAs stay out. */
function serialize(s: Snap): string {
  const c = s.context;
  return `${JSON.stringify(s.value)}|f${c.health.failures}|e${c.health.ejections}|p${c.health.probation ? 1 : 0}|m${c.health.history === undefined ? 0 : 1}`;
}

const describeEvent = (e: ModelEvent): string =>
  e.type.startsWith('xstate.after.') ? `after ${e.type.split('.')[2]}` : e.type === 'node.outcome' ? `outcome(${(e as { ok: boolean }).ok ? 'ok' : 'fail'})` : e.type === 'node.down' ? `down(${(e as { cause?: string }).cause ?? 'manual'})` : e.type;

const input = { id: 'gpu', ejection: { banMs: 1000, maxBanMs: 4000 } };
const [initial] = initialTransition(nodeMachine, input);
// Cast: @xstate/graph's ActorLogic type does not admit a machine with typed emitted events.
const adjacency = getAdjacencyMap(nodeMachine as AnyStateMachine, {
  fromState: initial,
  events: events as NodeEvent[],
  serializeState: (s) => serialize(s as Snap),
  stopWhen: (s) => s.status !== 'active',
});

/** Shortest event sequence to every state (BFS over the adjacency map). */
const pathTo = new Map<string, ModelEvent[]>([[serialize(initial), []]]);
{
  const queue = [serialize(initial)];
  while (queue.length > 0) {
    const key = queue.shift() as string;
    const here = pathTo.get(key) as ModelEvent[];
    for (const { event, state } of Object.values(adjacency[key as keyof typeof adjacency]?.transitions ?? {})) {
      const next = serialize(state as Snap);
      if (pathTo.has(next)) continue;
      pathTo.set(next, [...here, event as ModelEvent]);
      queue.push(next);
    }
  }
}

const chart = machineChart(nodeMachine);
const keyOf = (t: Pick<ChartTransition, 'source' | 'event' | 'guard' | 'targets'>) => `${t.source} · ${t.event ?? 'always'} [${t.guard ?? ''}] → ${t.targets.join(',')}`;
const ALL = new Set(chart.transitions.map(keyOf));
const covered = new Set<string>();

/** The chart key of a transition XState took, read from an inspection microstep. */
function takenKey(t: { source: { id: string }; eventType: string; guard?: unknown; target?: readonly { id: string }[] }): string {
  const prefix = 'xstate.after.';
  const suffix = `.${t.source.id}`;
  const event = t.eventType === '' ? null : t.eventType.startsWith(prefix) && t.eventType.endsWith(suffix) ? `after ${t.eventType.slice(prefix.length, -suffix.length)}` : t.eventType;
  return keyOf({ source: t.source.id, event, guard: t.guard === undefined ? null : guardName(t.guard), targets: (t.target ?? []).map((s) => s.id) });
}

/** Runs events on a real node actor; returns its snapshot after each, and records the transitions taken. */
function run(path: readonly ModelEvent[]): Snap[] {
  const clock = new ManualClock();
  const actor = createActor(nodeMachine, {
    input,
    clock,
    inspect: (e: InspectionEvent) => {
      if (e.type === '@xstate.microstep') for (const t of e._transitions) covered.add(takenKey(t as never));
    },
  });
  actor.start();
  const out: Snap[] = [];
  for (const e of path) {
    if (e.type.startsWith('xstate.after.')) {
      const due = clock.nextDue();
      expect(due, `a timer for ${e.type}`).toBeDefined();
      clock.advance((due as number) - clock.now());
    } else if (e.type === 'node.heartbeat' || e.type === 'node.seen') {
      actor.send({ type: e.type, at: clock.now() });
    } else {
      actor.send(e as NodeEvent);
    }
    out.push(actor.getSnapshot());
  }
  actor.stop();
  return out;
}

/** Edges whose event the source state handles (a delayed event only from its own state). */
const edges = adjacencyMapToArray(adjacency).filter(({ state, event }) => {
  const e = event as ModelEvent;
  if (e.type === AFTER.suspect) return (state as Snap).matches('watching');
  if (e.type === AFTER.down) return (state as Snap).matches('suspect');
  if (e.type === AFTER.ban) return (state as Snap).matches({ down: 'ejected' });
  return true;
});

describe('node statechart, model-based', () => {
  it(`generates a bounded state graph (${Object.keys(adjacency).length} states, ${edges.length} edges)`, () => {
    expect(Object.keys(adjacency).length).toBeGreaterThan(10);
    expect(Object.keys(adjacency).length).toBeLessThan(2000);
  });

  it('runs the shortest path to every edge on a real node actor and lands where the model says', () => {
    for (const { state, event, nextState } of edges) {
      const prefix = pathTo.get(serialize(state as Snap));
      expect(prefix).toBeDefined();
      const path = [...(prefix as ModelEvent[]), event as ModelEvent];
      const snaps = run(path);
      const last = snaps.at(-1) as Snap;
      expect(serialize(last), path.map(describeEvent).join(' → ')).toBe(serialize(nextState as Snap));
    }
  });

  afterAll(() => {
    const n = [...ALL].filter((k) => covered.has(k)).length;
    console.log(`node transitions covered: ${n}/${ALL.size}`);
  });

  it('covers every transition of the node statechart', () => {
    // Runs after the paths above have filled `covered`.
    expect([...ALL].filter((k) => !covered.has(k))).toEqual([]);
  });
});
