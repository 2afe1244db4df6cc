/**
 * Signed entries (docs/replication.md, "Signed entries"): replicas given the swarm secret apply
 * only what is signed with it. A plain client of the NATS server publishes forged entries,
 * a copy of a real one, forged heartbeats, a forged snapshot and announcement: nothing changes,
 * every forgery is counted, the replicas keep their digest and keep serving.
 */
import { describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { connectSwarm } from '../../src/replication/index.js';
import { LogSigner } from '../../src/replication/log-signer.js';
import { CONFIG, natsFixture, PROFILES, swarmName, until } from './replicas.js';

const nats = natsFixture();
const SECRET = 'a'.repeat(64);

describe('a signed log', () => {
  it('applies nothing a client without the secret publishes: forged, unsigned, unknown-version and copied entries, heartbeats, a snapshot, an announcement', async () => {
    const name = swarmName('signed');
    const a = await nats.replica(name, { secret: SECRET, snapshotEvery: 4 });
    const b = await nats.replica(name, { secret: SECRET, snapshotEvery: 4 });
    await a.markDown('phone');
    await a.markAlive('phone');
    const seq = a.stats().applied;
    await until(() => b.stats().applied === seq, 'b to apply');
    const digest = a.digest();
    expect(b.digest()).toBe(digest);

    const nc = await connect({ servers: nats.server.url });
    try {
      const js = jetstream(nc);
      const subject = `hecate.${name}.log`;
      const now = Date.now();
      const wrong = new LogSigner('b'.repeat(64), name);
      const forged = [
        { v: 1, type: 'swarm.event', id: 'evil.1', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } }, // unsigned, on a signed log
        { v: 2, type: 'swarm.event', id: 'evil.2', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' }, at: now }, // no signature
        wrong.signed('entry', { v: 2, type: 'swarm.event', id: 'evil.3', event: { type: 'node.removed', nodeId: 'gpu' }, at: now }), // another secret
        wrong.signed('entry', { v: 2, type: 'swarm.binding', id: 'evil.4', nodeId: 'gpu', key: 'k'.repeat(43), at: now }),
        { v: 99, type: 'swarm.event', id: 'evil.5', event: { type: 'node.down', nodeId: 'gpu' } }, // would halt a replica if believed
      ];
      for (const entry of forged) await js.publish(subject, JSON.stringify(entry));
      await js.publish(subject, 'not json at all');
      // A copy of a real entry (the down of phone), published again under another message id: a replay.
      const jsm = await jetstreamManager(nc);
      const down = await jsm.streams.getMessage(`HECATE_${name}`, { seq: seq - 1 });
      expect(JSON.parse(new TextDecoder().decode(down!.data))).toMatchObject({ v: 2, type: 'swarm.event', event: { type: 'node.down', nodeId: 'phone' } });
      await js.publish(subject, down!.data, { msgID: 'replayed' });
      // Heartbeats: a bare id (the unsigned format) and one signed with another secret.
      nc.publish(`hecate.${name}.hb`, 'gpu');
      nc.publish(`hecate.${name}.hb`, JSON.stringify(wrong.signed('heartbeat', { id: 'gpu', at: now })));
      // A snapshot and an announcement in the swarm's bucket, unsigned.
      const kv = await new Kvm(nc).open(`hecate_${name}`);
      await kv.put('snapshot', JSON.stringify({ v: 2, seq: 1_000_000_000, swarm: {}, touched: [] }));
      await kv.put('applied.evil', JSON.stringify({ replica: 'evil', seq: 0, at: now, reads: [1] }));

      const forgeries = forged.length + 2;
      await until(() => a.stats().rejected === forgeries && b.stats().rejected === forgeries, `both replicas to reject ${forgeries} entries (at ${a.stats().rejected}, ${b.stats().rejected})`);
      await until(() => a.stats().rejectedMessages >= 3, 'the forged heartbeats and announcement to be dropped');
      for (const r of [a, b]) {
        expect(r.digest()).toBe(digest);
        expect(r.replication()).toBe('connected');
        expect(r.node('gpu')?.state).toBe('alive');
        expect(r.node('phone')?.state).toBe('alive');
        expect(r.keyOf('gpu')).toBeUndefined();
      }
      // Still writing signed (version 2) entries: the forged announcement of a version-1 reader did not count.
      await b.markDown('laptop');
      await until(() => a.node('laptop')?.state === 'down', 'a to apply b\'s down');
      expect(a.digest()).toBe(b.digest());
      const last = await jsm.streams.getMessage(`HECATE_${name}`, { last_by_subj: subject });
      expect(JSON.parse(new TextDecoder().decode(last!.data))).toMatchObject({ v: 2, sig: expect.stringMatching(/^[0-9a-f]{64}$/) });

      // The forged snapshot's far sequence does not stop the replicas' own: the next boundary overwrites it.
      for (let i = 0; i < 3; i++) await a.markAlive('laptop').then(() => a.markDown('laptop'));
      await until(() => a.stats().applied === b.stats().applied, 'b to catch up');
      const ours = new LogSigner(SECRET, name);
      let held: { seq: number } | undefined;
      for (let i = 0; i < 250 && !ours.verify('snapshot', held); i++) {
        held = (await kv.get('snapshot'))?.json<{ seq: number }>();
        if (!ours.verify('snapshot', held)) await new Promise((r) => setTimeout(r, 20));
      }
      expect(ours.verify('snapshot', held)).toBe(true);
      expect(held!.seq).toBeLessThanOrEqual(a.stats().applied);
      // A replica starting now ignores the unsigned snapshot and replays the signed log to the same state.
      const c = await nats.replica(name, { secret: SECRET, snapshotEvery: 0 });
      expect(c.digest()).toBe(a.digest());
      expect(c.stats().rejected).toBe(forgeries);
      // One without the secret refuses the signed log clearly instead of applying it unchecked.
      await expect(connectSwarm({ servers: nats.server.url, swarm: name, snapshotEvery: 0, connectTimeoutMs: 3000 })).rejects.toMatchObject({
        code: 'UnknownVersion',
        message: expect.stringMatching(/log entry 1 is format version 2; this replica reads version 1: version 2 is signed with the swarm secret/),
      });
    } finally {
      await nc.close();
    }
  });

  it('replicates key bindings: the first bind of an id wins on every replica, an unbind frees it, and a replica starting from the snapshot has them', async () => {
    const name = swarmName('bindings');
    const a = await nats.replica(name, { secret: SECRET, snapshotEvery: 3, trimMargin: 0 });
    const b = await nats.replica(name, { secret: SECRET, snapshotEvery: 3, trimMargin: 0 });
    const k1 = '1'.repeat(43);
    const k2 = '2'.repeat(43);
    const [first, second] = await Promise.all([a.bindKey('gpu', k1), b.bindKey('gpu', k2)]);
    expect([first, second].filter(Boolean)).toHaveLength(1); // one key won, on both
    const winner = first ? k1 : k2;
    await until(() => b.keyOf('gpu') === winner && a.keyOf('gpu') === winner, 'both to hold the winner');
    expect(await b.bindKey('gpu', winner)).toBe(true); // the same key again: still its own
    expect(await a.bindKey('desktop', k1)).toBe(true);
    expect(await b.unbindKey('desktop')).toBe(true);
    expect(await b.unbindKey('desktop')).toBe(false);
    await until(() => a.keyOf('desktop') === undefined, 'a to apply the unbind');
    for (let i = 0; i < 4; i++) await a.markDown('phone').then(() => a.markAlive('phone'));
    await until(() => b.stats().applied === a.stats().applied, 'b to catch up');
    // The stream was trimmed past the bindings: a new replica has them only from the snapshot.
    const c = await nats.replica(name, { secret: SECRET });
    expect(c.stats().snapshot).toBeGreaterThan(4);
    expect(c.keyOf('gpu')).toBe(winner);
    expect(c.keyOf('desktop')).toBeUndefined();
    expect(c.digest()).toBe(a.digest());
    // Bindings need the secret (they are signed entries).
    const plain = await nats.replica(swarmName('plain'));
    await expect(plain.bindKey('gpu', k1)).rejects.toMatchObject({ code: 'InvalidInput' });
  });
});

describe('a log written before the secret, and a writer whose clock is off', () => {
  it('replays an unsigned log with the secret until its first signed entry seals it; then an unsigned entry is refused', async () => {
    const name = swarmName('sealing');
    const nc = await connect({ servers: nats.server.url });
    try {
      const js = jetstream(nc);
      await (await jetstreamManager(nc)).streams.add({ name: `HECATE_${name}`, subjects: [`hecate.${name}.log`], storage: StorageType.File, duplicate_window: 120_000_000_000 });
      const subject = `hecate.${name}.log`;
      await js.publish(subject, JSON.stringify({ v: 1, type: 'swarm.genesis', id: 'genesis', profiles: PROFILES, config: CONFIG, seed: 1 }), { msgID: 'genesis' });
      await js.publish(subject, JSON.stringify({ v: 1, type: 'swarm.event', id: 'old.c.1', event: { type: 'node.down', nodeId: 'phone', cause: 'manual' } }), { msgID: 'old.c.1' });
      const a = await nats.replica(name, { secret: SECRET, snapshotEvery: 0, replicaGraceMs: 400 });
      expect(a.node('phone')?.state).toBe('down');
      expect(a.stats()).toMatchObject({ applied: 2, rejected: 0 });
      await new Promise((r) => setTimeout(r, 500)); // a whole liveness window heard, no replica reading only 1: the writer moves to 2
      await a.markAlive('phone'); // the first signed entry: sealed from here
      await js.publish(subject, JSON.stringify({ v: 1, type: 'swarm.event', id: 'old.c.2', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } }), { msgID: 'old.c.2' });
      await until(() => a.stats().rejected === 1, 'the unsigned entry after the seal to be rejected');
      expect(a.node('gpu')?.state).toBe('alive');
      const b = await nats.replica(name, { secret: SECRET, snapshotEvery: 0 });
      expect(b.digest()).toBe(a.digest());
      expect(b.stats().rejected).toBe(1);
    } finally {
      await nc.close();
    }
  });

  it('refuses, on every replica alike, an entry its writer signed with a clock 40 s ahead; the call rejects with Rejected', async () => {
    const name = swarmName('skew');
    const a = await nats.replica(name, { secret: SECRET });
    const ahead = await nats.replica(name, { secret: SECRET, wallClock: { now: () => Date.now() + 40_000 } });
    await expect(ahead.markDown('gpu')).rejects.toMatchObject({ name: 'ReplicationError', code: 'Rejected', message: expect.stringMatching(/more than 30000 ms apart/) });
    await until(() => a.stats().rejected === 1, 'a to reject it too');
    expect(a.node('gpu')?.state).toBe('alive');
    expect(ahead.digest()).toBe(a.digest());
  });
});

describe('connectSwarm options', () => {
  it('refuses a short secret and bad NATS access options, naming them', async () => {
    const base = { servers: nats.server.url, swarm: 'x', profiles: PROFILES, config: CONFIG };
    await expect(connectSwarm({ ...base, secret: 'short' })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringContaining('option "secret"') });
    await expect(connectSwarm({ ...base, nats: { user: 'u' } })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringContaining('"nats.user" and "nats.pass" go together') });
    await expect(connectSwarm({ ...base, nats: { token: 't', credsFile: '/x' } })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringContaining('give one of') });
    await expect(connectSwarm({ ...base, nats: { tls: { cert: '/c' } } })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringContaining('"nats.tls.cert" and "nats.tls.key" go together') });
    await expect(connectSwarm({ ...base, nats: { credsFile: '/nonexistent.creds' } })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringContaining('cannot read /nonexistent.creds') });
  });
});
