/**
 * A replicated swarm against a real nats-server: replicas apply every lifecycle entry in stream
 * order and agree on plan, ids, rescues and status (docs/replication.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { connectSwarm, type ReplicatedSwarm } from '../../src/replication/index.js';
import { SnapshotStore } from '../../src/replication/snapshot-store.js';
import type { SwarmContract } from '../../src/runtime/swarm-contract.js';
import { proposeRandom } from './random-events.js';
import { NatsServer } from './nats-server.js';
import { CONFIG, converged, PROFILES, swarmName } from './replicas.js';

let server: NatsServer;
const open: ReplicatedSwarm[] = [];

beforeAll(async () => {
  server = await NatsServer.start();
});
afterAll(async () => {
  for (const r of open) await r.close();
  await server.dispose();
});

async function replica(swarm: string, genesis = true, snapshotEvery?: number): Promise<ReplicatedSwarm> {
  const r = await connectSwarm({ servers: server.url, swarm, ...(genesis ? { profiles: PROFILES, config: CONFIG } : {}), ...(snapshotEvery !== undefined ? { snapshotEvery } : {}) });
  open.push(r);
  return r;
}

describe('a replicated swarm', () => {
  it('gives every replica the same growth, rescue and status, each resolved where it was proposed', async () => {
    const name = swarmName('basic');
    const a = await replica(name);
    const b = await replica(name, false); // reads the genesis a wrote
    expect(b.digest()).toBe(a.digest());
    expect(a.replication()).toBe('connected');

    const growth = await b.addNode({ id: 'mini', memoryGb: 16, score: 4, latencyMs: 7 });
    const rescue = await a.markDown('gpu');
    await converged([a, b], a.stats().applied);
    expect(rescue.status).toBe('degraded');
    expect(rescue.recoveries.length).toBeGreaterThan(0);
    expect(a.state().plan).toEqual(b.state().plan);
    expect(a.state().plan.pipelines.map((p) => p.id)).toContain(growth.pipelines[0] ?? a.state().plan.pipelines[0]?.id);
    expect(a.status()).toBe('degraded');
    expect(b.status()).toBe('degraded');
    expect(b.digest()).toBe(a.digest());
    expect(a.route().stages.every((s) => s.nodeId !== 'gpu')).toBe(true);

    // A replica that joins later replays the log and starts where the others are.
    const c = await replica(name, false);
    expect(c.digest()).toBe(a.digest());
    expect(c.stats()).toMatchObject({ applied: a.stats().applied, entries: a.stats().applied });

    // Leases are each replica's own: the same sequence on two replicas never gives the same id.
    const la = a.route({}, { reserve: true }).lease;
    const lb = b.route({}, { reserve: true }).lease;
    expect(la.id).not.toBe(lb.id);
    expect(() => b.release(la)).toThrow(/unknown lease/);
    a.release(la);
    b.release(lb);
  });

  it('is the Swarm contract with log commits: reads are the local Swarm\'s, lifecycle calls resolve once applied, and closed it says so', async () => {
    const name = swarmName('contract');
    const a = await replica(name);
    const b = await replica(name, false);
    const contract: SwarmContract<'log'> = a; // the one contract, generic over how commands commit
    const downs: string[] = [];
    b.on('node.down', (e) => downs.push(`${e.nodeId}:${e.cause}`));
    const rescue = await contract.markDown('laptop');
    expect(rescue.nodeId).toBe('laptop');
    expect(a.node('laptop')).toMatchObject({ state: 'down', cause: 'manual' });
    await converged([a, b], a.stats().applied);
    expect(b.node('laptop')).toEqual(a.node('laptop'));
    expect(b.node('nope')).toBeUndefined();
    expect(downs).toEqual(['laptop:manual']);
    expect(b.status()).toBe(b.swarmReplica.status());
    expect(b.state()).toBe(b.swarmReplica.state());
    await a.markAlive('laptop');
    expect(a.node('laptop')?.state).toBe('alive');
    expect(() => a.heartbeat('nope')).toThrow(expect.objectContaining({ name: 'SwarmError', code: 'UnknownNode' }));
    await a.close();
    expect(a.replication()).toBe('closed');
    expect(() => a.status()).toThrow(expect.objectContaining({ name: 'SwarmError', code: 'Stopped' }));
    expect(() => a.on('node.down', () => undefined)()).not.toThrow();
    await expect(a.removeNode('phone')).rejects.toMatchObject({ name: 'ReplicationError', code: 'Closed' });
  });

  it('keeps applying when an orchestrator handler throws: the error comes back on its own, the log goes on', async () => {
    const name = swarmName('throwing-handler');
    await replica(name);
    const thrown: unknown[] = [];
    // The replica's I/O clock, with timers that catch what a callback throws (it would otherwise be uncaught).
    const ioClock = { now: () => Date.now(), setTimeout: (f: () => void, ms: number) => setTimeout(() => { try { f(); } catch (e) { thrown.push(e); } }, ms), clearTimeout: (h: unknown) => clearTimeout(h as never) };
    const b = await connectSwarm({ servers: server.url, swarm: name, ioClock });
    open.push(b);
    const heard: number[] = [];
    b.on('replication.applied', () => {
      throw new Error('handler bug');
    });
    b.on('replication.applied', (e) => heard.push(e.seq));
    await b.markDown('gpu');
    await b.markAlive('gpu');
    await b.addNode({ id: 'mini', memoryGb: 16, score: 4 });
    expect(heard).toHaveLength(3);
    expect(b.replication()).toBe('connected');
    await new Promise((r) => setTimeout(r, 20));
    expect(thrown.map((e) => (e as Error).message)).toEqual(['handler bug', 'handler bug', 'handler bug']);
  });

  it('refuses a lifecycle call alike on every replica and rejects it where it was proposed', async () => {
    const name = swarmName('refused');
    const a = await replica(name);
    await expect(a.markDown('nope')).rejects.toMatchObject({ name: 'SwarmError', code: 'UnknownNode' });
    await expect(a.addNode({ id: 'gpu', memoryGb: 8 })).rejects.toMatchObject({ code: 'DuplicateNode' });
    expect(a.stats().refused).toBe(2);
    expect(a.status()).toBe('healthy');
  });

  it('starts a new replica from the KV snapshot and replays only the entries after it', async () => {
    const name = swarmName('snapshot');
    const a = await replica(name, true, 25);
    const result = await proposeRandom(a, 60, 3, PROFILES.map((p) => p.id), 'j', 4);
    expect(result.failed).toEqual([]);
    expect(a.stats().applied).toBe(61);
    const nc = await connect({ servers: server.url });
    try {
      const store = await SnapshotStore.open(nc, name);
      let stored = 0;
      for (let i = 0; i < 100 && stored !== 50; i++) {
        stored = (await store.load())?.seq ?? 0;
        if (stored !== 50) await new Promise((r) => setTimeout(r, 20));
      }
      expect(stored).toBe(50);
    } finally {
      await nc.close();
    }
    const b = await replica(name, false, 25);
    expect(b.stats()).toMatchObject({ snapshot: 50, entries: 11, applied: 61 });
    expect(b.digest()).toBe(a.digest());
    // It goes on from there like any replica.
    await b.markDown('desktop').catch(() => undefined);
    await converged([a, b], b.stats().applied);
    expect(a.digest()).toBe(b.digest());
    // A replica with snapshots off replays the whole log to the same state.
    const c = await replica(name, false, 0);
    expect(c.stats()).toMatchObject({ snapshot: 0, entries: b.stats().applied });
    expect(c.digest()).toBe(a.digest());
  });

  it('refuses bad options, a genesis no replica could build, and a swarm with no genesis, each typed', async () => {
    await expect(connectSwarm({ servers: server.url, swarm: 'no spaces' })).rejects.toMatchObject({ name: 'ReplicationError', code: 'InvalidInput' });
    await expect(connectSwarm({ servers: server.url, swarm: 'x', profiles: PROFILES })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringMatching(/"profiles" and "config" go together/) });
    const name = swarmName('nogenesis');
    // 4 nodes of 8-24 GB cannot hold 2 copies of 100 layers: the planner refuses, nothing is logged.
    await expect(connectSwarm({ servers: server.url, swarm: name, profiles: PROFILES, config: { models: [{ id: 'big', layers: 100, pipelines: 2 }] } })).rejects.toMatchObject({ name: 'PlanError' });
    await expect(connectSwarm({ servers: server.url, swarm: name, connectTimeoutMs: 300 })).rejects.toMatchObject({ name: 'ReplicationError', code: 'NoGenesis' });
  });
});
