/**
 * Warm start of a replica over NATS (docs/replication.md): a replica joining a
 * 200-node swarm whose JetStream log holds 10,000 lifecycle events must serve within 2 s. The
 * log's snapshot in the KV bucket is at its worst: a writer replica stored it after 9,500 events
 * and the last 500 (the most the default `snapshotEvery = 500` leaves) came after. Measured: connecting
 * with the snapshot (KV read, restore, the tail) and with `snapshotEvery: 0` (the whole log).
 * Both must end on the writer's digest. Needs `nats-server` (Debian's package; `npm test`
 * provisions it); not part of `npm run bench`. Run: `npm run build:bench && node
 * dist-bench/bench/replication-warm-start.js`.
 */
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createSwarm } from '../src/index.js';
import { swarmDigest } from '../src/persistence/index.js';
import { connectSwarm, type LogEntry } from '../src/replication/index.js';
import { lifecycleLog, replay } from './warm-start.js';
import { pipelines8 } from './synthetic.js';
import { NatsServer } from '../test/replication/nats-server.js';

const TARGET_MS = 2000;

async function main(): Promise<void> {
  const server = await NatsServer.start(); // the replication tests' harness: free loopback port, temporary store
  try {
    const url = server.url;
    const t = pipelines8(6, 2); // 4 models in 6 copies of 8 stages + 8 spares: 200 nodes, as bench/warm-start.ts
    const events = lifecycleLog(t, 10_000);
    const head = 9500;
    const writer = await connectSwarm({ servers: url, swarm: 'warm', profiles: t.profiles, config: t.config, seed: 18, snapshotEvery: 500 });
    const nc = await connect({ servers: url });
    const js = jetstream(nc);
    const publish = async (from: number, to: number) => {
      for (let i = from; i < to; i += 200) {
        await Promise.all(
          events.slice(i, Math.min(i + 200, to)).map((event, k) => {
            const entry: LogEntry = { v: 1, type: 'swarm.event', id: `bench.${i + k}`, event };
            return js.publish('hecate.warm.log', JSON.stringify(entry), { msgID: entry.id });
          }),
        );
      }
    };
    await publish(0, head);
    while (writer.stats().applied < head + 1) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 500)); // the KV store of the snapshot at entry 9,500
    await writer.close(); // no later snapshot: the tail stays 500 events long
    await publish(head, events.length);
    await nc.close();

    const reference = createSwarm(t.profiles, t.config, { seed: 18 });
    replay(reference, events);
    const expected = swarmDigest(reference);
    reference.stop();

    const time = async (snapshotEvery: number) => {
      const start = performance.now();
      const r = await connectSwarm({ servers: url, swarm: 'warm', snapshotEvery });
      const ms = performance.now() - start;
      r.route(); // it serves
      const { snapshot, entries, applied } = r.stats();
      const same = r.digest() === expected;
      await r.close();
      if (!same) throw new Error(`replication warm start: the replica (snapshot ${snapshot}) ends on another digest than the whole log's`);
      return { ms, snapshot, entries, applied };
    };
    const full = await time(0);
    const warm = [await time(500), await time(500), await time(500)].sort((a, b) => a.ms - b.ms)[1] as Awaited<ReturnType<typeof time>>;
    console.log(`replication warm start, ${t.profiles.length} nodes, ${events.length} events on the log:`);
    console.log(`  whole log (snapshotEvery 0): ${full.ms.toFixed(0)} ms, ${full.entries} entries applied`);
    console.log(`  KV snapshot at ${warm.snapshot} + ${warm.entries} entries: ${warm.ms.toFixed(0)} ms (median of 3), target <= ${TARGET_MS} ms: ${warm.ms <= TARGET_MS ? 'pass' : 'FAIL'}`);
    if (warm.ms > TARGET_MS) process.exitCode = 1;
  } finally {
    await server.dispose();
  }
}

await main();
