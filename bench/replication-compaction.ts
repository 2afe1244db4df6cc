/**
 * A replicated swarm's log over a long life (docs/replication.md, "Compaction"): 100,000 lifecycle
 * events on a 200-node swarm on a real nats-server, half of them agents joining and leaving (each
 * join puts its agent in the directory, each leave removes it, as `hecate-node serve` does; one
 * join in 50 vanishes instead: down and never heard again, left to `forgetAfterMs`), half downs and
 * revivals of members. Two replicas apply them with the defaults (`snapshotEvery` 500,
 * `trimMargin` 500). Measured, whenever both have caught up: the stream's entries (target: at most
 * `snapshotEvery + trimMargin`), the directory's keys against the swarm's members, then the time a
 * new replica takes to serve (target 2 s) and its digest against theirs. Needs `nats-server`
 * (scripts/ensure-nats-server.sh); not part of `npm run bench`. Run: `npm run build:bench && node
 * dist-bench/bench/replication-compaction.js [events]`.
 */
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { LifecycleEvent } from '../src/persistence/index.js';
import { directoryBucket, idToKey } from '../src/replication/agent-directory.js';
import { connectSwarm, type LogEntry, type ReplicatedSwarm } from '../src/replication/index.js';
import { kReplica } from '../src/replication/replicated-swarm.js';
import { NatsServer } from '../test/replication/nats-server.js';
import { pipelines8 } from './synthetic.js';

const EVENTS = Number(process.argv[2] ?? 100_000);
const EVERY = 500;
const MARGIN = 500;
const FORGET_MS = 3000;
const GRACE_MS = 10_000; // replicaGraceMs: directory markers are purged once this old
const SERVE_MS = 2000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Join/leave cycles and down/alive pairs, seeded, keeping 200 members (plus the vanished until forgotten). */
function* churn(base: readonly { id: string; memoryGb: number }[], count: number): Generator<{ event: LifecycleEvent; directory?: 'put' | 'delete' }> {
  let s = 29;
  const rnd = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  let n = 0;
  let joined = 0;
  while (n < count) {
    const like = base[Math.floor(rnd() * base.length)] as { id: string; memoryGb: number };
    if (rnd() < 0.5) {
      const id = `joined-${joined++}`;
      yield { event: { type: 'node.added', profile: { ...like, id } }, directory: 'put' };
      if (joined % 50 === 0) yield { event: { type: 'node.down', nodeId: id, cause: 'detector' } }; // vanished
      else yield { event: { type: 'node.removed', nodeId: id }, directory: 'delete' };
    } else {
      yield { event: { type: 'node.down', nodeId: like.id, cause: 'manual' } };
      yield { event: { type: 'node.alive', nodeId: like.id, cause: 'manual' } };
    }
    n += 2;
  }
}

async function main(): Promise<void> {
  const server = await NatsServer.start();
  const replicas: ReplicatedSwarm[] = [];
  try {
    const url = server.url;
    const t = pipelines8(6, 2); // 200 nodes
    const opts = { servers: url, swarm: 'long', forgetAfterMs: FORGET_MS, proposeTimeoutMs: 2000, replicaGraceMs: GRACE_MS } as const; // directory entries of non-members go after 2 x 2 s
    replicas.push(await connectSwarm({ ...opts, profiles: t.profiles, config: t.config, seed: 18 }));
    replicas.push(await connectSwarm(opts));
    const [a, b] = replicas as [ReplicatedSwarm, ReplicatedSwarm];
    const nc = await connect({ servers: url });
    const js = jetstream(nc);
    const directory = await new Kvm(nc).create(directoryBucket('long'), { history: 1 });
    for (const p of t.profiles) await directory.put(idToKey(p.id), JSON.stringify({ profile: p, url: `http://127.0.0.1:1/${p.id}` }));
    const log = a[kReplica].log;
    let published = 1;
    let maxCaughtUp = 0;
    let maxAny = 0;
    let samples = 0;
    const start = performance.now();
    const batch: Promise<unknown>[] = [];
    const flush = async () => {
      await Promise.all(batch.splice(0));
      maxAny = Math.max(maxAny, (await log.bounds()).messages);
    };
    for (const { event, directory: op } of churn(t.profiles, EVENTS)) {
      const entry: LogEntry = { v: 1, type: 'swarm.event', id: `bench.${published}`, event };
      batch.push(js.publish('hecate.long.log', JSON.stringify(entry), { msgID: entry.id }));
      const id = event.type === 'node.added' ? event.profile.id : event.nodeId;
      if (op === 'put' && event.type === 'node.added') batch.push(directory.put(idToKey(id), JSON.stringify({ profile: event.profile, url: `http://127.0.0.1:1/${id}` })));
      if (op === 'delete') batch.push(directory.delete(idToKey(id)));
      published++;
      if (batch.length >= 200) await flush();
      if (published % 5000 === 0) {
        await flush();
        // Both caught up, the boundary's trim done: the stream as a steady swarm keeps it.
        while (a.stats().applied < published || b.stats().applied < published) await sleep(20);
        await sleep(300);
        maxCaughtUp = Math.max(maxCaughtUp, (await log.bounds()).messages);
        samples++;
      }
    }
    await flush();
    while (a.stats().applied < published || b.stats().applied < published) await sleep(50);
    const applyS = (performance.now() - start) / 1000;
    // The vanished members: forgotten after FORGET_MS, then a boundary prunes their directory entries.
    const vanished = () => Object.keys(a.state().nodes).filter((id) => a.node(id)?.state === 'down' && id.startsWith('joined-')).length;
    const vanishedAtEnd = vanished();
    const deadline = Date.now() + FORGET_MS * 4;
    while (vanished() > 0 && Date.now() < deadline) await sleep(100);
    // Two more snapshot boundaries (down/alive pairs of a member), past the directory grace (4 s)
    // and the markers' (GRACE_MS).
    await sleep(GRACE_MS + 500);
    for (let i = 0; i < 2 * EVERY; i += 2) {
      const id = t.profiles[0]?.id as string;
      await a.markDown(id);
      await a.markAlive(id);
    }
    while (b.stats().applied < a.stats().applied) await sleep(20);
    await sleep(500);
    const bounds = await log.bounds();
    const members = Object.keys(a.state().nodes).length;
    // The directory's keys, as a watcher sees them (every entry there, then caught up).
    const keys = new Set<string>();
    const watch = await directory.watch();
    for await (const e of watch) {
      if (e.operation === 'PUT') keys.add(e.key);
      else keys.delete(e.key);
      if (e.delta === 0) break;
    }
    watch.stop();
    const extra = [...keys].map((k) => Buffer.from(k, 'base64url').toString()).filter((id) => a.node(id) === undefined);
    const dirStatus = await directory.status();

    const t0 = performance.now();
    const c = await connectSwarm({ servers: url, swarm: 'long' });
    const serveMs = performance.now() - t0;
    c.route();
    const same = c.digest() === a.digest() && b.digest() === a.digest();
    const cs = c.stats();
    await c.close();
    await nc.close();

    console.log(`replication compaction: ${published - 1} lifecycle events, ${t.profiles.length} base nodes, snapshotEvery ${EVERY}, trimMargin ${MARGIN}, 2 replicas (${applyS.toFixed(0)} s to publish and apply)`);
    console.log(`  stream entries when caught up (max of ${samples} samples): ${maxCaughtUp}, target <= ${EVERY + MARGIN}: ${maxCaughtUp <= EVERY + MARGIN ? 'pass' : 'FAIL'}; max seen mid-batch: ${maxAny}`);
    console.log(`  stream at the end: entries ${bounds.first}..${bounds.last} (${bounds.messages} entries, ${(bounds.bytes / 1024).toFixed(0)} KiB), ${a.stats().applied} applied`);
    console.log(`  members ${members} (vanished at the end of the run ${vanishedAtEnd}, still down and unforgotten ${vanished()}); directory keys ${keys.size}, target <= members: ${keys.size <= members ? 'pass' : 'FAIL'}${extra.length > 0 ? ` (not members: ${extra.join(', ')})` : ''}; directory bucket messages ${dirStatus.values}`);
    console.log(`  a new replica serves after ${serveMs.toFixed(0)} ms (snapshot ${cs.snapshot} + ${cs.entries} entries), target <= ${SERVE_MS} ms: ${serveMs <= SERVE_MS ? 'pass' : 'FAIL'}; same digest on the three: ${same}`);
    if (maxCaughtUp > EVERY + MARGIN || keys.size > members || serveMs > SERVE_MS || !same) process.exitCode = 1;
  } finally {
    for (const r of replicas) await r.close();
    await server.dispose();
  }
}

await main();
