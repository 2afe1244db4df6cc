/**
 * Saving the KV snapshot during the upgrade window (docs/replication.md, "Upgrades: format
 * versions"), against a real nats-server: a replica with the secret and one without save the same
 * boundary at once; the unsigned save lands between the signed one's read and its
 * compare-and-set, and the replica with the secret overwrites it, so a replica restarted with the
 * secret can start from the snapshot.
 */
import { describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { ManualClock } from '../../src/index.js';
import { persistSwarm } from '../../src/persistence/persist-swarm.js';
import { Swarm } from '../../src/runtime/swarm.js';
import { LogSigner } from '../../src/replication/log-signer.js';
import { SnapshotStore, type StoredSnapshot } from '../../src/replication/snapshot-store.js';
import { CONFIG, natsFixture, PROFILES, swarmName } from './replicas.js';

const nats = natsFixture();
const SECRET = 's'.repeat(64);

describe('SnapshotStore', () => {
  it('with the secret, overwrites an unsigned snapshot of the same sequence that another replica saved between its read and its write', async () => {
    const nc = await connect({ servers: nats.server.url });
    try {
      const name = swarmName('snap-race');
      const signer = new LogSigner(SECRET, name);
      const withSecret = await SnapshotStore.open(nc, name, 1, [1, 2], signer);
      const without = await SnapshotStore.open(nc, name, 1);
      const swarm = new Swarm(PROFILES, CONFIG, { clock: new ManualClock() });
      const persisted = persistSwarm(swarm);
      swarm.stop();
      const at = (seq: number): StoredSnapshot => ({ v: 1, seq, swarm: persisted, touched: [] });
      expect(await without.save(at(4))).toBe(true);
      // The replica without the secret saves 8 just after the one with it read the bucket.
      const kv = withSecret.kv;
      const get = kv.get.bind(kv);
      let raced = false;
      kv.get = async (key: string) => {
        const read = await get(key);
        if (!raced) {
          raced = true;
          expect(await without.save(at(8))).toBe(true);
        }
        return read;
      };
      expect(await withSecret.save(at(8))).toBe(true);
      const held = (await get('snapshot'))!.json<StoredSnapshot>();
      expect(held.seq).toBe(8);
      expect(signer.verify('snapshot', held)).toBe(true);
      expect(await withSecret.load()).toMatchObject({ v: 1, seq: 8 });
      // The one without the secret does not overwrite it with the same sequence, nor an earlier one.
      expect(await without.save(at(8))).toBe(false);
      expect(await without.save(at(4))).toBe(false);
      // A signed one later than its own stays.
      expect(await withSecret.save(at(6))).toBe(false);
    } finally {
      await nc.close();
    }
  });
});
