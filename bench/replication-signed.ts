/**
 * What the swarm secret costs a replica (docs/replication.md, "Signed entries"): the same 2,000
 * lifecycle events of a 200-node swarm on two logs, one unsigned (format 1) and one signed with
 * the secret (format 2), each replayed whole by a new replica (`snapshotEvery: 0`), alternately,
 * 5 times each; prints the medians and their ratio. Both must end on the digest of an in-process
 * replay. Needs `nats-server`; not part of `npm run bench`. Run: `npm run build:bench && node
 * dist-bench/bench/replication-signed.js`.
 */
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createSwarm } from '../src/index.js';
import { swarmDigest } from '../src/persistence/index.js';
import { connectSwarm } from '../src/replication/index.js';
import { LogSigner } from '../src/replication/log-signer.js';
import { NatsServer } from '../test/replication/nats-server.js';
import { pipelines8 } from './synthetic.js';
import { lifecycleLog, replay } from './warm-start.js';

const SECRET = 'bench-secret-'.padEnd(64, 'x');
const EVENTS = 2000;
const RUNS = 5;

async function main(): Promise<void> {
  const server = await NatsServer.start();
  try {
    const url = server.url;
    const t = pipelines8(6, 2); // 200 nodes, as bench/replication-warm-start.ts
    const events = lifecycleLog(t, EVENTS);
    // The genesis through connectSwarm (signed with the secret for the signed log), then the events published raw.
    for (const [swarm, secret] of [['plain', undefined], ['signed', SECRET]] as const) {
      const writer = await connectSwarm({ servers: url, swarm, profiles: t.profiles, config: t.config, seed: 18, snapshotEvery: 0, ...(secret !== undefined ? { secret } : {}) });
      await writer.close();
      const signer = secret !== undefined ? new LogSigner(secret, swarm) : undefined;
      const nc = await connect({ servers: url });
      const js = jetstream(nc);
      for (let i = 0; i < events.length; i += 200) {
        await Promise.all(
          events.slice(i, i + 200).map((event, k) => {
            const id = `bench.${i + k}`;
            const entry = signer !== undefined ? signer.signed('entry', { v: 2, type: 'swarm.event', id, event, at: Date.now() }) : { v: 1, type: 'swarm.event', id, event };
            return js.publish(`hecate.${swarm}.log`, JSON.stringify(entry), { msgID: id });
          }),
        );
      }
      await nc.close();
    }
    const reference = createSwarm(t.profiles, t.config, { seed: 18 });
    replay(reference, events);
    const expected = swarmDigest(reference);
    reference.stop();

    const time = async (swarm: string, secret?: string): Promise<number> => {
      const start = performance.now();
      const r = await connectSwarm({ servers: url, swarm, snapshotEvery: 0, ...(secret !== undefined ? { secret } : {}) });
      const ms = performance.now() - start;
      const { digest, rejected } = { digest: r.digest(), rejected: r.stats().rejected };
      await r.close();
      if (digest !== expected || rejected !== 0) throw new Error(`replication-signed: the ${swarm} log replayed to another digest (rejected ${rejected})`);
      return ms;
    };
    const plain: number[] = [];
    const signed: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      plain.push(await time('plain'));
      signed.push(await time('signed', SECRET));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    console.log(`replication, ${t.profiles.length} nodes, ${events.length} events replayed whole by a new replica (median of ${RUNS}, alternating):`);
    console.log(`  unsigned log: ${median(plain).toFixed(0)} ms; signed log, checked with the secret: ${median(signed).toFixed(0)} ms; ratio ${(median(signed) / median(plain)).toFixed(2)}`);
  } finally {
    await server.dispose();
  }
}

await main();
