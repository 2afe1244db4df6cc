/**
 * A rolling upgrade to signed entries (docs/replication.md, "Upgrades: format versions"): a
 * replica without the swarm secret stands for the release before (it reads and writes format
 * version 1, and announces `reads: [1]`). While it is live, the writers with the secret keep the
 * log at version 1, so it never halts; once it is gone (restarted with the secret), the writers
 * move to version 2 after a liveness window, and from the first signed entry on nothing unsigned
 * counts: neither an entry nor an announcement of `reads: [1]`. Snapshots follow the entries: version
 * 1, signed by a replica with the secret, so one restarted with it can start from one.
 */
import { describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { connectSwarm } from '../../src/replication/index.js';
import { LogSigner } from '../../src/replication/log-signer.js';
import { WRITES_FORMATS } from '../../src/replication/log-entry.js';
import { CONFIG, converged, natsFixture, PROFILES, swarmName, until } from './replicas.js';

const nats = natsFixture();
const SECRET = 's'.repeat(64);
/** The liveness window (replicaGraceMs): replicas announce every quarter of it. */
const GRACE_MS = 3000;
const K = 'k'.repeat(43);
/** The newest format this release writes (2: signed; 3: with rebalance entries), which the writers move to once every live replica reads it. */
const NEWEST = WRITES_FORMATS[WRITES_FORMATS.length - 1] as number;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a rolling upgrade to signed entries', () => {
  it('never halts a replica of the release before; moves to the newest signed version once it is gone; unsigned entries and announcements count for nothing after the first signed entry', async () => {
    const name = swarmName('upgrade');
    const nc = await connect({ servers: nats.server.url });
    try {
      const jsm = await jetstreamManager(nc);
      const stream = `HECATE_${name}`;
      /** The format version of every entry on the stream from `from` on. */
      const versions = async (from = 1): Promise<number[]> => {
        const { state } = await jsm.streams.info(stream);
        const out: number[] = [];
        for (let seq = from; seq <= state.last_seq; seq++) out.push((JSON.parse(new TextDecoder().decode((await jsm.streams.getMessage(stream, { seq }))!.data)) as { v: number }).v);
        return out;
      };

      // B, the release before, starts the log; A, with the secret, joins it and writes at once.
      const b = await nats.replica(name, { replicaId: 'b', replicaGraceMs: GRACE_MS, snapshotEvery: 3 });
      const bSaid: string[] = [];
      b.on('replication.changed', (e) => bSaid.push(e.status));
      const a = await nats.replica(name, { replicaId: 'a', secret: SECRET, replicaGraceMs: GRACE_MS, snapshotEvery: 3 });
      await a.markDown('phone'); // before A heard anyone for a window: the floor (1)
      expect(await versions()).toEqual([1, 1]);
      expect(await a.bindKey('gpu', K)).toBe(true); // a binding while B is live stays on A
      await b.markAlive('phone');
      await sleep(GRACE_MS + 500); // A has heard B for a whole window: B reads only version 1
      await a.markDown('laptop');
      expect(await versions()).toEqual([1, 1, 1, 1]);
      await b.markDown('desktop');
      await a.markAlive('laptop');
      await converged([a, b], a.stats().applied);
      expect(bSaid).not.toContain('disconnected');
      expect(b.replication()).toBe('connected');
      expect(b.digest()).toBe(a.digest());
      expect(await versions()).toEqual([1, 1, 1, 1, 1, 1]); // the genesis and five events, no binding
      expect(a.keyOf('gpu')).toBe(K);
      expect(b.keyOf('gpu')).toBeUndefined();
      expect(a.stats()).toMatchObject({ floor: 1, format: 1, heldBy: ['b'] });
      const kv = await new Kvm(nc).open(`hecate_${name}`);
      // The snapshots (at 3 and 6, by either) follow the entries: version 1, which B reads.
      let held: { v: number; seq: number } | undefined;
      for (let i = 0; i < 250 && held === undefined; i++) {
        held = (await kv.get('snapshot'))?.json<{ v: number; seq: number }>();
        if (held === undefined) await sleep(20);
      }
      expect(held).toMatchObject({ v: 1 });
      expect(held!.seq).toBeGreaterThanOrEqual(3);

      // B is upgraded: stopped, then started again with the secret. A writes 2 a whole window
      // after B's announcement of reads: [1] was withdrawn (its binding may go on the log at its
      // next announcement then, before any call).
      const firstSigned = a.stats().applied + 1;
      const stopping = Date.now();
      await b.close();
      const upgraded = await nats.replica(name, { replicaId: 'b', secret: SECRET, replicaGraceMs: GRACE_MS, snapshotEvery: 3 });
      await until(() => a.stats().format === NEWEST, 'A to write the newest version a window after B stopped', 4 * GRACE_MS);
      expect(Date.now() - stopping).toBeGreaterThanOrEqual(GRACE_MS); // not before: B's withdrawal counts as B heard
      await a.markAlive('desktop'); // every live replica reads the newest, and A heard them for a window
      await until(() => upgraded.keyOf('gpu') === K, 'A\'s binding to reach the log and B');
      await upgraded.markDown('phone'); // B's window has not passed, but the log is signed now: the floor is the newest
      await converged([a, upgraded], upgraded.stats().applied);
      expect(upgraded.digest()).toBe(a.digest());
      expect(await versions(firstSigned)).toEqual([NEWEST, NEWEST, NEWEST]); // the revival, the binding (in either order), the down
      for (const r of [a, upgraded]) expect(r.stats()).toMatchObject({ floor: NEWEST, format: NEWEST });

      // Unsigned, after the first signed entry: a v1 entry changes nothing, and an announcement
      // of reads: [1] does not take the writers back to version 1.
      const digest = a.digest();
      const dropped = [a, upgraded].map((r) => r.stats().rejectedMessages);
      await jetstream(nc).publish(`hecate.${name}.log`, JSON.stringify({ v: 1, type: 'swarm.event', id: 'evil.1', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } }));
      await kv.put('applied.old', JSON.stringify({ replica: 'old', seq: 0, at: Date.now(), reads: [1] }));
      await until(() => a.stats().rejected === 1 && upgraded.stats().rejected === 1, 'both replicas to reject the unsigned entry');
      await until(() => a.stats().rejectedMessages > dropped[0]! && upgraded.stats().rejectedMessages > dropped[1]!, 'both to drop the unsigned announcement');
      for (const r of [a, upgraded]) {
        expect(r.digest()).toBe(digest);
        expect(r.node('gpu')?.state).toBe('alive');
      }
      const after = a.stats().applied + 1;
      await a.markAlive('phone');
      await upgraded.markDown('laptop');
      expect(await versions(after)).toEqual([NEWEST, NEWEST]);

      // A fresh replica of the release before refuses the signed log clearly.
      await expect(connectSwarm({ servers: nats.server.url, swarm: name, snapshotEvery: 0, connectTimeoutMs: 3000 })).rejects.toMatchObject({
        code: 'UnknownVersion',
        message: expect.stringMatching(new RegExp(`log entry ${firstSigned} is format version ${NEWEST}; this replica reads version 1`)),
      });
    } finally {
      await nc.close();
    }
  });

  it('writes the snapshots of an unsigned log in version 1, signed, so a replica restarted with the secret starts from one', async () => {
    const name = swarmName('upgrade-snap');
    const nc = await connect({ servers: nats.server.url });
    try {
      const subject = `hecate.${name}.log`;
      await (await jetstreamManager(nc)).streams.add({ name: `HECATE_${name}`, subjects: [subject], storage: StorageType.File, duplicate_window: 120_000_000_000 });
      const js = jetstream(nc);
      await js.publish(subject, JSON.stringify({ v: 1, type: 'swarm.genesis', id: 'genesis', profiles: PROFILES, config: CONFIG, seed: 1 }), { msgID: 'genesis' });
      for (const [n, type] of [[1, 'node.down'], [2, 'node.alive'], [3, 'node.down']] as const) await js.publish(subject, JSON.stringify({ v: 1, type: 'swarm.event', id: `old.c.${n}`, event: { type, nodeId: 'phone', cause: 'manual' } }), { msgID: `old.c.${n}` });
      const a = await nats.replica(name, { secret: SECRET, snapshotEvery: 2 });
      const kv = await new Kvm(nc).open(`hecate_${name}`);
      let held: { v: number; seq: number } | undefined;
      for (let i = 0; i < 250 && held === undefined; i++) {
        held = (await kv.get('snapshot'))?.json<{ v: number; seq: number }>();
        if (held === undefined) await sleep(20);
      }
      expect(held).toMatchObject({ v: 1 }); // the floor is 1 and A has not heard anyone for a window
      expect(new LogSigner(SECRET, name).verify('snapshot', held)).toBe(true);
      const c = await nats.replica(name, { secret: SECRET });
      expect(c.stats()).toMatchObject({ applied: 4, floor: 1 });
      expect(c.stats().snapshot).toBeGreaterThanOrEqual(2); // a signed one of version 1: an unsigned one it would not trust
      expect(c.digest()).toBe(a.digest());
    } finally {
      await nc.close();
    }
  });
});
