/**
 * Format versions of a replicated swarm's log and snapshot (docs/replication.md, "Upgrades"): a
 * log and a KV snapshot as the release before wrote them replay to the same state; a version this
 * release does not read is refused, naming it; writers keep the oldest version a live replica
 * reads.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createSwarm, type NodeProfile, type SwarmConfig } from '../../src/index.js';
import { applyEvent, restoreSwarm, swarmDigest, type LifecycleEvent, type PersistedSwarm } from '../../src/persistence/index.js';
import { connectSwarm } from '../../src/replication/index.js';
import { SnapshotStore } from '../../src/replication/snapshot-store.js';
import { CONFIG, natsFixture, PROFILES, swarmName, until } from './replicas.js';
import { LEGACY_CONFIG, LEGACY_PROFILES } from '../persistence/fixtures/legacy-swarm.js';

const nats = natsFixture();
const replica = nats.replica.bind(nats);

// The swarm the persistence tests' legacy save (format hecate-swarm/swarm version 1) was made of.
const profiles: NodeProfile[] = LEGACY_PROFILES;
const config: SwarmConfig = LEGACY_CONFIG;

describe('the format before', () => {
  it('a log and a KV snapshot as the previous release wrote them replay to the same state, from the snapshot or from the genesis', async () => {
    const name = swarmName('previous');
    const nc = await connect({ servers: nats.server.url });
    try {
      // The stream as the previous release created it (file storage, no limits, a 2-minute dedupe window).
      await (await jetstreamManager(nc)).streams.add({ name: `HECATE_${name}`, subjects: [`hecate.${name}.log`], storage: StorageType.File, duplicate_window: 120_000_000_000 });
      const js = jetstream(nc);
      // The previous release's bytes (its encodeEntry: JSON of { v: 1, type, id, … }; the genesis's id 'genesis').
      await js.publish(`hecate.${name}.log`, JSON.stringify({ v: 1, type: 'swarm.genesis', id: 'genesis', profiles, config, seed: 1 }), { msgID: 'genesis' });
      const head: LifecycleEvent[] = [{ type: 'node.down', nodeId: 'desktop', cause: 'manual' }, { type: 'node.alive', nodeId: 'desktop', cause: 'manual' }, { type: 'node.down', nodeId: 'phone', cause: 'manual' }];
      const tail: LifecycleEvent[] = [{ type: 'node.alive', nodeId: 'desktop', cause: 'manual' }, { type: 'node.added', profile: { id: 'mini3', memoryGb: 12, score: 4 } }, { type: 'node.down', nodeId: 'gpu', cause: 'manual' }];
      let n = 0;
      for (const event of [...head, ...tail]) await js.publish(`hecate.${name}.log`, JSON.stringify({ v: 1, type: 'swarm.event', id: `old.c0nn3ct10n.${++n}`, event }), { msgID: `old.c0nn3ct10n.${n}` });
      // Its KV snapshot at the end of the head: { v: 1, seq, swarm, touched }, the swarm in the save format before the snapshot, no genesis.
      const legacy = JSON.parse(readFileSync(new URL('../persistence/fixtures/legacy-swarm-v1.json', import.meta.url), 'utf8')) as PersistedSwarm;
      const store = await SnapshotStore.open(nc, name);
      await store.kv.put('snapshot', JSON.stringify({ v: 1, seq: 1 + head.length, swarm: legacy, touched: [] }));

      const fromSnapshot = await connectSwarm({ servers: nats.server.url, swarm: name });
      const whole = await connectSwarm({ servers: nats.server.url, swarm: name, snapshotEvery: 0 });
      try {
        expect(fromSnapshot.stats()).toMatchObject({ snapshot: 4, entries: 3, applied: 7, refused: 0 });
        const restored = restoreSwarm(profiles, config, legacy);
        for (const e of tail) applyEvent(restored, e);
        expect(fromSnapshot.digest()).toBe(swarmDigest(restored));
        expect(whole.stats()).toMatchObject({ snapshot: 0, applied: 7, refused: 0 });
        const replayed = createSwarm(profiles, config, { seed: 1 });
        for (const e of [...head, ...tail]) applyEvent(replayed, e);
        expect(whole.digest()).toBe(swarmDigest(replayed));
        restored.stop();
        replayed.stop();
      } finally {
        await fromSnapshot.close();
        await whole.close();
      }
    } finally {
      await nc.close();
    }
  });
});

describe('a format version this release does not read', () => {
  it('refuses, naming the version, a log entry or a snapshot in a format this release does not read', async () => {
    const name = swarmName('version');
    const a = await replica(name);
    const halted: Error[] = [];
    a.on('replication.changed', (e) => (e.error !== undefined ? halted.push(e.error) : undefined));
    const nc = await connect({ servers: nats.server.url });
    try {
      const { jetstream } = await import('@nats-io/jetstream');
      await jetstream(nc).publish(`hecate.${name}.log`, JSON.stringify({ v: 2, type: 'swarm.event', id: 'future.1', event: { type: 'node.down', nodeId: 'gpu' } }));
      await until(() => halted.length > 0, 'the replica to halt');
      expect(halted[0]).toMatchObject({ name: 'ReplicationError', code: 'UnknownVersion', message: expect.stringMatching(/log entry 2 is format version 2; this replica reads version 1/) });
      expect(a.replication()).toBe('disconnected');
      expect(a.node('gpu')?.state).toBe('alive'); // not applied: it serves its last view
      await expect(connectSwarm({ servers: nats.server.url, swarm: name, snapshotEvery: 0, connectTimeoutMs: 3000 })).rejects.toMatchObject({ code: 'UnknownVersion' });
      const other = swarmName('version-snap');
      const store = await SnapshotStore.open(nc, other);
      await store.kv.put('snapshot', JSON.stringify({ v: 3, seq: 1, swarm: {}, touched: [] }));
      await expect(connectSwarm({ servers: nats.server.url, swarm: other, profiles: PROFILES, config: CONFIG })).rejects.toMatchObject({ code: 'UnknownVersion', message: expect.stringMatching(/snapshot at log sequence 1 is format version 3/) });
    } finally {
      await nc.close();
    }
  });
});
