/**
 * Compaction of a replicated swarm's log against a real nats-server (docs/replication.md,
 * "Compaction"): the stream is trimmed below what every live replica applied, a replica behind
 * the trim starts from the KV snapshot, a silent replica stops holding the trim back, forgotten
 * members leave the log's state, the snapshot and the agent directory.
 */
import { describe, expect, it } from 'vitest';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { connectSwarm } from '../../src/replication/index.js';
import { openAgentDirectory } from '../../src/replication/agent-directory.js';
import { kReplica } from '../../src/replication/replicated-swarm.js';
import { SnapshotStore } from '../../src/replication/snapshot-store.js';
import { proposeRandom } from './random-events.js';
import { CONFIG, converged, natsFixture, PROFILES, swarmName, until } from './replicas.js';

const nats = natsFixture();
const replica = nats.replica.bind(nats);

describe('a compacting log', () => {
  it('is trimmed to the snapshot interval plus the margin, and a replica behind the trim starts from the snapshot', async () => {
    const name = swarmName('trim');
    const a = await replica(name, { snapshotEvery: 20, trimMargin: 5 });
    const b = await replica(name, { snapshotEvery: 20, trimMargin: 5 });
    const result = await proposeRandom(a, 150, 11, PROFILES.map((p) => p.id), 'j', 4);
    expect(result.failed).toEqual([]);
    await converged([a, b], 151);
    const log = a[kReplica].log;
    // The last trim follows the snapshot at 140: entries from 136 on stay (140 - 5 + 1).
    let bounds = await log.bounds();
    for (let i = 0; i < 100 && bounds.first < 136; i++) {
      await new Promise((r) => setTimeout(r, 20));
      bounds = await log.bounds();
    }
    expect(bounds.first).toBe(136);
    expect(bounds.last).toBe(151);
    expect(bounds.messages).toBeLessThanOrEqual(20 + 5);
    expect(a.stats().lag).toBe(0);
    // The genesis is gone from the stream: a new replica starts from the KV snapshot, with snapshots on or off.
    const c = await replica(name, { snapshotEvery: 20 });
    expect(c.stats()).toMatchObject({ snapshot: 140, entries: 11, applied: 151 });
    expect(c.digest()).toBe(a.digest());
    const d = await connectSwarm({ servers: nats.server.url, swarm: name, snapshotEvery: 0 });
    try {
      expect(d.stats()).toMatchObject({ snapshot: 140, applied: 151 });
      expect(d.digest()).toBe(a.digest());
    } finally {
      await d.close();
    }
  });

  it('waits for a live replica behind, stops waiting once it is silent past the grace, and refuses to start with no snapshot to reach the log', async () => {
    const name = swarmName('behind');
    const a = await replica(name, { snapshotEvery: 10, trimMargin: 2, replicaGraceMs: 60_000 });
    const nc = await connect({ servers: nats.server.url });
    try {
      const store = await SnapshotStore.open(nc, name);
      // A live replica that has applied only up to 4: nothing below 4 - 2 goes.
      await store.kv.put('applied.slow', JSON.stringify({ replica: 'slow', seq: 4, at: Date.now(), reads: [1] }));
      await proposeRandom(a, 40, 5, PROFILES.map((p) => p.id), 'k', 2);
      await converged([a], 41);
      await new Promise((r) => setTimeout(r, 200));
      expect((await a[kReplica].log.bounds()).first).toBe(3);
      // Silent since long before the grace: it no longer holds the trim back, and its announcement goes.
      await store.kv.put('applied.slow', JSON.stringify({ replica: 'slow', seq: 4, at: Date.now() - 120_000, reads: [1] }));
      await proposeRandom(a, 10, 6, PROFILES.map((p) => p.id), 'm', 2);
      await converged([a], 51);
        let first = 0;
      for (let i = 0; i < 100 && first !== 49; i++) {
        first = (await a[kReplica].log.bounds()).first;
        if (first !== 49) await new Promise((r) => setTimeout(r, 20));
      }
      expect(first).toBe(49);
      expect(await store.kv.get('applied.slow').then((e) => e?.operation)).not.toBe('PUT');
      // The snapshot lost: a starting replica cannot reach the trimmed log, and says so.
      await store.kv.purge('snapshot');
      await expect(connectSwarm({ servers: nats.server.url, swarm: name, connectTimeoutMs: 2000 })).rejects.toMatchObject({ name: 'ReplicationError', code: 'Trimmed', message: expect.stringMatching(/starts at entry 49 \(trimmed\)/) });
    } finally {
      await nc.close();
    }
  });

  it('forgets a member down and unheard past forgetAfterMs: removed through the log once, out of the snapshot, and out of the agent directory once written 2 x proposeTimeoutMs ago', async () => {
    const name = swarmName('forget');
    const a = await replica(name, { snapshotEvery: 5, trimMargin: 2, forgetAfterMs: 300, proposeTimeoutMs: 1000 });
    const b = await replica(name, { snapshotEvery: 5, trimMargin: 2, forgetAfterMs: 300, proposeTimeoutMs: 1000 });
    const directory = await openAgentDirectory({ servers: [nats.server.url], swarm: name, onChange: () => undefined });
    const removed: string[] = [];
    b.on('node.left', (e) => removed.push(e.nodeId));
    try {
      await directory.put({ profile: PROFILES[3] as (typeof PROFILES)[number], url: 'http://127.0.0.1:1' });
      await directory.put({ profile: PROFILES[0] as (typeof PROFILES)[number], url: 'http://127.0.0.1:2' });
      // Every node but the phone heartbeats; the phone goes down and stays silent.
      const beat = setInterval(() => {
        for (const id of ['gpu', 'desktop', 'laptop']) a.heartbeat(id);
      }, 50);
      try {
        await a.markDown('phone');
        await until(() => a.node('phone') === undefined && b.node('phone') === undefined, 'the phone forgotten on both replicas', 10_000);
        // More entries (genesis, down, removal, six downs: 9), so a snapshot after the removal is stored.
        for (let i = 0; i < 6; i++) await a.markDown(i % 2 === 0 ? 'laptop' : 'desktop').catch(() => undefined);
        await until(() => a.stats().applied >= 9 && b.stats().applied >= 9, 'nine entries on both');
      } finally {
        clearInterval(beat);
      }
      expect(removed).toEqual(['phone']);
      expect(a.stats().refused).toBe(0); // one removal applied, the other replica's (if any) stale
      expect(a.digest()).toBe(b.digest());
      const nc = await connect({ servers: nats.server.url });
      try {
        const snapshot = await (await SnapshotStore.open(nc, name)).load();
            expect(JSON.stringify(snapshot?.touched)).not.toContain('phone');
        expect(JSON.stringify(snapshot?.swarm)).not.toMatch(/"phone"/);
        const kv = await new Kvm(nc).open(`hecate-${name}-agents`);
        const keys = async () => {
          const out = new Set<string>();
          for await (const k of await kv.keys()) out.add(Buffer.from(k, 'base64url').toString());
          return [...out];
        };
        let left = await keys();
        for (let i = 0; i < 100 && left.includes('phone'); i++) {
          await a.markDown(i % 2 === 0 ? 'laptop' : 'desktop').catch(() => undefined);
          await new Promise((r) => setTimeout(r, 50));
          left = await keys();
        }
        expect(left).toEqual(['gpu']);
      } finally {
        await nc.close();
      }
    } finally {
      await directory.close();
    }
  });
});

describe('the stream on a NATS cluster', () => {
  it('is created with streamReplicas copies: a single server refuses 3, the option checked first', async () => {
    await expect(connectSwarm({ servers: nats.server.url, swarm: swarmName('r6'), streamReplicas: 6 })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringMatching(/"streamReplicas" must be an integer from 1 to 5, got 6/) });
    await expect(connectSwarm({ servers: nats.server.url, swarm: swarmName('r3'), profiles: PROFILES, config: CONFIG, streamReplicas: 3 })).rejects.toThrow(/replica/i);
    const name = swarmName('r1');
    const a = await replica(name, { streamReplicas: 1 });
    expect((await a[kReplica].log.jsm.streams.info(`HECATE_${name}`)).config.num_replicas).toBe(1);
  });
});
