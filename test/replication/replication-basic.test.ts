/**
 * A replicated swarm against a real nats-server: replicas apply every lifecycle entry in stream
 * order and agree on plan, ids, rescues and status (docs/replication.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSwarm, type ReplicatedSwarm } from '../../src/replication/index.js';
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

async function replica(swarm: string, genesis = true): Promise<ReplicatedSwarm> {
  const r = await connectSwarm({ servers: server.url, swarm, ...(genesis ? { profiles: PROFILES, config: CONFIG } : {}) });
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
  });

  it('refuses a lifecycle call alike on every replica and rejects it where it was proposed', async () => {
    const name = swarmName('refused');
    const a = await replica(name);
    await expect(a.markDown('nope')).rejects.toMatchObject({ name: 'SwarmError', code: 'UnknownNode' });
    await expect(a.addNode({ id: 'gpu', memoryGb: 8 })).rejects.toMatchObject({ code: 'DuplicateNode' });
    expect(a.stats().refused).toBe(2);
    expect(a.status()).toBe('healthy');
  });
});
