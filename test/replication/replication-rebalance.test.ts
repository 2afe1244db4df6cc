/**
 * A rebalance on a replicated swarm (docs/rebalance.md "Replicas, serve and agents"): its decision
 * and each move's progress are log entries (`swarm.rebalance`, format version 3), applied by every
 * replica alike, those without the rebalancer too; the replica that decided loads the spans. A
 * replica of the release before (reads 1 and 2) holds the writers below version 3, so a rebalance
 * is refused while it is live, and one connecting after a rebalance halts on the entry, naming the
 * version. A snapshot taken while a move is pending carries it.
 */
import { describe, expect, it } from 'vitest';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { NodeProfile, SwarmConfig } from '../../src/index.js';
import { rebalancer, type SpanOrder } from '../../src/rebalance/index.js';
import { connectSwarm, type ReplicatedSwarm } from '../../src/replication/index.js';
import { kFormats } from '../../src/replication/replica-trust.js';
import { checkEntry, READS_FORMATS } from '../../src/replication/log-entry.js';
import { kInternals } from '../../src/runtime/internal.js';
import { converged, natsFixture, swarmName, until } from './replicas.js';

const nats = natsFixture();
const SECRET = 'r'.repeat(64);
/** The liveness window: the writers move to version 3 a window after they started hearing the others. */
const GRACE_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// docs/rebalance.md's swarm: the fast node holds 8 of the 32 layers, so the copy waits on the slow one.
const NODES: NodeProfile[] = [
  { id: 'fast', memoryGb: 8, score: 8 },
  { id: 'slow', memoryGb: 32, score: 1 },
];
const CONF: SwarmConfig = { models: [{ id: 'base', layers: 32 }] };
const NEW: NodeProfile = { id: 'new', memoryGb: 20, score: 8 };

const pending = (r: ReplicatedSwarm): string[] => [...((r.swarmReplica[kInternals].actor.getSnapshot().context as { moves?: Map<string, unknown> }).moves?.keys() ?? [])];
const copies = (r: ReplicatedSwarm) => r.state().plan.pipelines.map((p) => p.stages.map((s) => s.nodeId).join('+'));

/** A loader that holds every span until `open()`. */
function gatedLoader(): { load: (span: SpanOrder) => Promise<void>; spans: SpanOrder[]; open(): void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const spans: SpanOrder[] = [];
  const load = async (span: SpanOrder): Promise<void> => {
    spans.push(span);
    await gate;
  };
  return { load, spans, open: () => open() };
}

/** The move events on the stream, with their format version. */
async function moveEntries(name: string): Promise<{ v: number; event: string }[]> {
  const nc = await connect({ servers: nats.server.url });
  try {
    const jsm = await jetstreamManager(nc);
    const stream = `HECATE_${name}`;
    const { state } = await jsm.streams.info(stream);
    const out: { v: number; event: string }[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const e = JSON.parse(new TextDecoder().decode((await jsm.streams.getMessage(stream, { seq }))!.data)) as { v: number; type: string; event?: { type: string } };
      if (e.type === 'swarm.rebalance') out.push({ v: e.v, event: e.event?.type ?? '' });
    }
    return out;
  } finally {
    await nc.close();
  }
}

describe('the rebalance entry', () => {
  it('is format version 3 only, and its move event is checked by shape (BadLog naming the field)', () => {
    const begin = { type: 'rebalance.begin', moves: [{ id: 'm1', modelId: 'base', removes: [], adds: [], loading: [], breakFirst: false }] };
    expect(checkEntry({ v: 3, type: 'swarm.rebalance', id: 'x', event: begin }, 5, READS_FORMATS)).toMatchObject({ type: 'swarm.rebalance' });
    expect(() => checkEntry({ v: 2, type: 'swarm.rebalance', id: 'x', event: begin }, 5, READS_FORMATS)).toThrow(/log entry 5: unknown type "swarm.rebalance"/);
    expect(() => checkEntry({ v: 3, type: 'swarm.rebalance', id: 'x', event: { type: 'span.loaded', moveId: 'm1' } }, 6, READS_FORMATS)).toThrow(/log entry 6: a span.loaded needs "moveId" and "nodeId"/);
    expect(() => checkEntry({ v: 3, type: 'swarm.rebalance', id: 'x', event: { type: 'move.teleport' } }, 7, READS_FORMATS)).toThrow(/unknown move event "move.teleport"/);
    expect(() => checkEntry({ v: 3, type: 'swarm.rebalance', id: 'x', event: begin }, 8, [1, 2])).toThrow(/log entry 8 is format version 3; this replica reads version 1, 2: upgrade it to a release that reads version 3/);
  });
});

describe('a rebalance through the log', () => {
  it('applies one decision on every replica, the moves carried out by the replica that decided; a snapshot taken while a move is pending carries it', async () => {
    const name = swarmName('rebalance');
    const loader = gatedLoader();
    const common = { secret: SECRET, replicaGraceMs: GRACE_MS, profiles: NODES, config: CONF, snapshotEvery: 1 };
    const a = await nats.replica(name, { ...common, replicaId: 'a', rebalancer: rebalancer({ load: loader.load }) });
    const b = await nats.replica(name, { ...common, replicaId: 'b' }); // no rebalancer: it applies the entries all the same
    await a.addNode(NEW);
    // Before the writers heard everyone for a window they write the floor, 2: no rebalance entry yet.
    await expect(a.rebalance()).rejects.toMatchObject({ name: 'ReplicationError', code: 'Refused', message: expect.stringMatching(/format version 2 now.*version 3 at least/) });
    await expect(b.rebalance()).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringMatching(/has no rebalancer/) });
    await sleep(GRACE_MS + 300);
    expect(a.stats().format).toBe(3);
    const r = await a.rebalance();
    expect(r.moves.map((m) => [m.kind, m.adds.map((p) => p.stages.map((s) => s.nodeId).join('+'))])).toEqual([['regroup', ['new+fast+slow']]]);
    expect(r.moves[0]?.id.startsWith('a.')).toBe(true); // the proposer's prefix: unique among replicas
    await converged([a, b], a.stats().applied);
    await until(() => loader.spans.length === 2, 'the deciding replica to load its spans');
    expect(loader.spans.map((s) => s.nodeId).sort()).toEqual(['fast', 'new']);
    expect(pending(a)).toEqual([r.moves[0]?.id]);
    expect(pending(b)).toEqual(pending(a));
    expect(b.digest()).toBe(a.digest());
    expect(a.stats().floor).toBe(3);

    // A replica starting now starts from a snapshot that holds the pending move.
    const c = await nats.replica(name, { ...common, replicaId: 'c' });
    expect(c.stats().snapshot).toBeGreaterThan(0);
    expect(c.stats().floor).toBe(3); // the snapshot keeps the floor
    expect(pending(c)).toEqual(pending(a));
    expect(c.digest()).toBe(a.digest());

    loader.open();
    await until(() => [a, b, c].every((x) => pending(x).length === 0), 'the move to finish on every replica');
    await converged([a, b, c], a.stats().applied);
    for (const x of [a, b, c]) expect(copies(x)).toEqual(['new+fast+slow']);
    expect(new Set([a, b, c].map((x) => x.digest())).size).toBe(1);
    // Break-first (the fast node cannot hold both spans): drained, then each node's span loaded.
    expect(await moveEntries(name)).toEqual([
      { v: 3, event: 'rebalance.begin' },
      { v: 3, event: 'copy.drained' },
      { v: 3, event: 'span.loaded' },
      { v: 3, event: 'span.loaded' },
    ]);
    expect(await a.rebalance()).toMatchObject({ moves: [] }); // a fixed point, on the log too
    expect(a.stats().refused).toBe(0);
  });

  it('is refused while a replica of the release before is live; one connecting after a rebalance halts on its entry, naming the version', async () => {
    const name = swarmName('rebalance-upgrade');
    const common = { secret: SECRET, replicaGraceMs: GRACE_MS, profiles: NODES, config: CONF };
    const old = await nats.replica(name, { ...common, replicaId: 'old', [kFormats]: [1, 2] } as Partial<Parameters<typeof connectSwarm>[0]>);
    const a = await nats.replica(name, { ...common, replicaId: 'a', rebalancer: rebalancer({ load: async () => undefined }) });
    await a.addNode(NEW);
    await sleep(GRACE_MS + 300);
    expect(a.stats()).toMatchObject({ format: 2, heldBy: ['old'] });
    await expect(a.rebalance()).rejects.toMatchObject({ code: 'Refused' });
    expect(await moveEntries(name)).toEqual([]);
    await old.close(); // withdraws its announcement: a window later the writers write 3
    await sleep(GRACE_MS + 300);
    expect(a.stats().format).toBe(3);
    expect((await a.rebalance()).moves).toHaveLength(1);
    await until(() => pending(a).length === 0, 'the move to finish');
    await expect(connectSwarm({ servers: nats.server.url, swarm: name, secret: SECRET, snapshotEvery: 0, connectTimeoutMs: 3000, [kFormats]: [1, 2] } as Parameters<typeof connectSwarm>[0])).rejects.toMatchObject({
      name: 'ReplicationError',
      code: 'UnknownVersion',
      message: expect.stringMatching(/log entry \d+ is format version 3; this replica reads version 1, 2: upgrade it to a release that reads version 3/),
    });
  });
});
