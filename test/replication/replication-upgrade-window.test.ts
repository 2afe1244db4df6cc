/**
 * The liveness window of a rolling upgrade (docs/replication.md, "Upgrades: format versions"),
 * against a real nats-server: a writer with the secret cut off from NATS longer than the window
 * hears the announcements for a whole window again after it reconnects before it writes version 2,
 * so a replica of the release before (no secret) that kept announcing meanwhile never halts.
 */
import { describe, expect, it } from 'vitest';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { LogSigner } from '../../src/replication/log-signer.js';
import { TcpCut } from './nats-server.js';
import { converged, natsFixture, swarmName, until } from './replicas.js';

const nats = natsFixture();
const SECRET = 's'.repeat(64);
/** The liveness window (replicaGraceMs): short, the test waits about three of them. */
const GRACE_MS = 800;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a writer cut off from NATS during the upgrade window', () => {
  it('listens for a whole window again after the reconnect: its entries stay version 1 under a live replica of the release before', async () => {
    const name = swarmName('upgrade-cut');
    const relay = await TcpCut.to(nats.server.port);
    const nc = await connect({ servers: nats.server.url });
    try {
      const old = await nats.replica(name, { replicaId: 'old', replicaGraceMs: GRACE_MS, snapshotEvery: 0 });
      const oldSaid: string[] = [];
      old.on('replication.changed', (e) => oldSaid.push(e.status));
      const w = await nats.replica(name, { replicaId: 'w', secret: SECRET, servers: relay.url, replicaGraceMs: GRACE_MS, snapshotEvery: 0, proposeTimeoutMs: 10_000 });
      await sleep(GRACE_MS + 100);
      expect(w.stats().format).toBe(1); // it heard the old replica for a window

      relay.cut();
      await until(() => w.replication() === 'disconnected', 'the writer to be cut off');
      await sleep(GRACE_MS + 200); // the old replica's last announcement W heard is stale now
      expect(w.stats().format).toBe(1);
      const down = w.markDown('gpu'); // made while cut off, published on the reconnect
      relay.heal();
      await down;
      await until(() => w.replication() === 'connected', 'the writer to rejoin');
      await w.markAlive('gpu'); // within a window of the reconnect
      await converged([old, w], w.stats().applied);
      expect(oldSaid).not.toContain('disconnected');
      expect(old.replication()).toBe('connected');
      expect(old.digest()).toBe(w.digest());
      const stream = `HECATE_${name}`;
      const jsm = await jetstreamManager(nc);
      const { state } = await jsm.streams.info(stream);
      for (let seq = 1; seq <= state.last_seq; seq++) expect(JSON.parse(new TextDecoder().decode((await jsm.streams.getMessage(stream, { seq }))!.data))).toMatchObject({ v: 1 });
      expect(w.stats()).toMatchObject({ floor: 1, format: 1 }); // the old replica is live
      await w.close(); // before its relay closes
    } finally {
      await nc.close();
      await relay.close();
    }
  });

  it('a replica without the secret keeps the signed snapshot and trims no further while one with it is around: that one restarts from it', async () => {
    const name = swarmName('upgrade-restart');
    const nc = await connect({ servers: nats.server.url });
    try {
      const opts = { replicaGraceMs: 60_000, snapshotEvery: 4, trimMargin: 1 };
      const o = await nats.replica(name, { replicaId: 'o', ...opts });
      const w = await nats.replica(name, { replicaId: 'w', secret: SECRET, ...opts });
      for (let i = 0; i < 10; i++) {
        await o[i % 2 ? 'markAlive' : 'markDown']('phone');
        await converged([o, w], o.stats().applied);
      }
      await sleep(200);
      await w.close();
      for (let i = 0; i < 10; i++) await o[i % 2 ? 'markAlive' : 'markDown']('phone');
      await sleep(400); // o's boundaries pass: it saves and trims
      const kv = await new Kvm(nc).open(`hecate_${name}`);
      const held = (await kv.get('snapshot'))?.json<{ seq: number }>();
      expect(new LogSigner(SECRET, name).verify('snapshot', held)).toBe(true); // not overwritten by o's unsigned one
      const first = (await (await jetstreamManager(nc)).streams.info(`HECATE_${name}`)).state.first_seq;
      expect(first).toBeLessThanOrEqual(held?.seq ?? 0); // not trimmed past it
      const w2 = await nats.replica(name, { replicaId: 'w2', secret: SECRET, ...opts });
      await converged([o, w2], o.stats().applied);
      expect(w2.digest()).toBe(o.digest());
    } finally {
      await nc.close();
    }
  });

  it('a replica with the secret on a log trimmed under an unsigned snapshot says so (Trimmed, "unsigned snapshot")', async () => {
    const name = swarmName('upgrade-unsigned');
    const opts = { replicaGraceMs: 60_000, snapshotEvery: 4, trimMargin: 1 };
    const o = await nats.replica(name, { replicaId: 'o', ...opts });
    for (let i = 0; i < 10; i++) await o[i % 2 ? 'markAlive' : 'markDown']('phone');
    const nc = await connect({ servers: nats.server.url });
    try {
      const jsm = await jetstreamManager(nc);
      for (let i = 0; i < 100 && (await jsm.streams.info(`HECATE_${name}`)).state.first_seq === 1; i++) await sleep(50);
      expect((await jsm.streams.info(`HECATE_${name}`)).state.first_seq).toBeGreaterThan(1); // trimmed under o's unsigned snapshot
    } finally {
      await nc.close();
    }
    await expect(nats.replica(name, { replicaId: 'w', secret: SECRET, ...opts, connectTimeoutMs: 5000 })).rejects.toMatchObject({ code: 'Trimmed', message: expect.stringMatching(/the KV snapshot is an unsigned snapshot/) });
  });
});
