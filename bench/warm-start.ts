/**
 * Warm start and catch-up (docs/persistence.md): a replica joining a 200-node swarm whose log holds 10,000
 * lifecycle events — downs (detector, manual, ejected), revivals, joins and retirements in a
 * realistic mix — must serve within 2 s. Measured: (a) replaying the whole log through a fresh
 * Swarm, (b) restoring a snapshot persisted at event 9,500 (parsed from its JSON, as a key-value
 * store hands it back) and replaying the last 500. Both must end on the same digest. Plus the
 * replay cost per event at about 50 and 1,000 nodes (2,000 and 500 events). Run alone (`node dist-bench/bench/warm-start.js`)
 * it prints a table.
 */
import { pathToFileURL } from 'node:url';
import { createSwarm, type Swarm } from '../src/index.js';
import { applyEvent, persistSwarm, restoreSwarm, swarmDigest, type LifecycleEvent, type PersistedSwarm } from '../src/persistence/index.js';
import { medianMs, QUICK } from './measure.js';
import { pipelines8, type Topology } from './synthetic.js';
import type { BenchRow } from './types.js';

/** The target (docs/persistence.md): caught up and serving within 2 s. */
export const WARM_START_MS = 2000;

/**
 * A seeded log of `count` lifecycle events over a topology: about 35% downs (60% by the
 * detector, 30% manual, 10% ejections), as many revivals (each by its down's way back), 15%
 * joins of a newcomer of a node class already present and 15% retirements, keeping the swarm
 * near its size and at most a tenth of it down.
 */
export function lifecycleLog(t: Topology, count: number, seed = 18): LifecycleEvent[] {
  let s = seed >>> 0;
  const rnd = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const members = t.profiles.map((p) => p.id);
  const down = new Map<string, 'manual' | 'detector' | 'ejected'>();
  const size = members.length;
  const log: LifecycleEvent[] = [];
  let joined = 0;
  while (log.length < count) {
    const r = rnd();
    if (down.size > 0 && (r < 0.35 || down.size >= size / 10)) {
      const id = pick([...down.keys()]);
      const cause = down.get(id);
      down.delete(id);
      log.push({ type: 'node.alive', nodeId: id, cause: cause === 'detector' ? 'heartbeat' : cause === 'ejected' ? 'probation' : 'manual' });
    } else if (r < 0.7) {
      const up = members.filter((id) => !down.has(id));
      const id = pick(up);
      const c = rnd();
      const cause = c < 0.6 ? 'detector' : c < 0.9 ? 'manual' : 'ejected';
      down.set(id, cause);
      log.push({ type: 'node.down', nodeId: id, cause });
    } else if (r < 0.85 || members.length < size * 0.95) {
      const like = t.profiles[Math.floor(rnd() * t.profiles.length)];
      const profile = { ...like, id: `joined-${joined++}` } as (typeof t.profiles)[number];
      members.push(profile.id);
      log.push({ type: 'node.added', profile });
    } else {
      const i = Math.floor(rnd() * members.length);
      const [id] = members.splice(i, 1) as [string];
      down.delete(id);
      log.push({ type: 'node.removed', nodeId: id });
    }
  }
  return log;
}

/** Applies events as a replica does: a refused one (an id gone meanwhile) changes nothing and is skipped. */
export function replay(swarm: Swarm, events: readonly LifecycleEvent[]): void {
  for (const e of events) {
    try {
      applyEvent(swarm, e);
    } catch {
      // the same refusal on every replica: nothing changed
    }
  }
}

/** The topology of `nodes` nodes: 4 models in copies of 8 stages, the rest spares. */
function swarmOf(nodes: number): Topology {
  const copies = Math.floor(nodes / 32) - (nodes % 32 === 0 ? 1 : 0);
  return pipelines8(copies, Math.round((nodes - copies * 32) / 4));
}

const round = (x: number) => Number(x.toPrecision(4));

/** The warm-start rows. */
export function warmStartBench(log: (line: string) => void = () => {}): BenchRow[] {
  const rows: BenchRow[] = [];
  const t = swarmOf(200);
  const events = lifecycleLog(t, 10_000);
  const tail = 500;
  const size = `${t.profiles.length} nodes, ${events.length} events`;
  log(`warm start: ${size}`);
  // The snapshot a replica finds in the store: persisted after all but the tail, as JSON text.
  const writer = createSwarm(t.profiles, t.config, { seed: 18 });
  replay(writer, events.slice(0, -tail));
  const stored = JSON.stringify(persistSwarm(writer));
  replay(writer, events.slice(-tail));
  const expected = swarmDigest(writer);
  writer.stop();
  const check = (swarm: Swarm, how: string) => {
    if (swarmDigest(swarm) !== expected) throw new Error(`warm start: ${how} ends on digest ${swarmDigest(swarm)}, the writer on ${expected}`);
    swarm.stop();
  };
  const full = medianMs(QUICK ? 1 : 3, () => {
    const start = performance.now();
    const swarm = createSwarm(t.profiles, t.config, { seed: 18 });
    replay(swarm, events);
    const ms = performance.now() - start;
    check(swarm, 'the full replay');
    return ms;
  });
  const warm = medianMs(QUICK ? 3 : 9, () => {
    const start = performance.now();
    const swarm = restoreSwarm(t.profiles, t.config, JSON.parse(stored) as PersistedSwarm);
    replay(swarm, events.slice(-tail));
    const ms = performance.now() - start;
    check(swarm, 'the snapshot and tail');
    return ms;
  });
  rows.push({ name: 'warm start: replay the whole log', size, median: round(full), unit: 'ms', target: '(reference)', pass: true });
  rows.push({
    name: `warm start: snapshot + the last ${tail} events`,
    size: `${size} (snapshot ${Math.round(stored.length / 1024)} KB)`,
    median: round(warm),
    unit: 'ms',
    baselineName: 'whole log',
    baseline: round(full),
    ratio: round(warm / full),
    target: `<= ${WARM_START_MS} ms`,
    pass: warm <= WARM_START_MS,
  });
  for (const nodes of [50, 1000]) {
    const s = swarmOf(nodes);
    const n = QUICK ? 200 : nodes >= 1000 ? 500 : 2000;
    const few = lifecycleLog(s, n);
    log(`warm start: replay at ${s.profiles.length} nodes`);
    const ms = medianMs(1, () => {
      const swarm = createSwarm(s.profiles, s.config, { seed: 18 });
      const start = performance.now();
      replay(swarm, few);
      const took = performance.now() - start;
      swarm.stop();
      return took;
    });
    rows.push({ name: 'warm start: replay, per event', size: `${s.profiles.length} nodes, ${n} events`, median: round((ms * 1000) / n), unit: 'µs/event', target: '(reference)', pass: true });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.table(warmStartBench((line) => console.error(line)));
}
