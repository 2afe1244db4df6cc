/**
 * Two replicas on a real nats-server see each other's reservations: announced on the swarm's
 * core subject, merged into the routing cost's in-flight load, gone on release and at once when
 * the holder closes (docs/replication.md, "Shared load").
 */
import { describe, expect, it } from 'vitest';
import { kInternals } from '../../src/runtime/internal.js';
import { natsFixture, swarmName, until } from './replicas.js';

const nats = natsFixture();

describe('shared load over NATS', () => {
  it('shows each replica the other\'s open reservations, priced with its own, until released or the holder leaves', async () => {
    const name = swarmName('shared-load');
    const a = await nats.replica(name, { replicaId: 'ra' });
    const b = await nats.replica(name, { replicaId: 'rb' });
    const la = a.route({}, { reserve: true });
    const lb = b.route({}, { reserve: true });
    const nodes = (route: typeof la) => Object.fromEntries(route.stages.map((s) => [s.nodeId, 1]));
    await until(() => b.sharedLoad().replicas.length === 1 && a.sharedLoad().replicas.length === 1, 'each replica to hear the other');
    expect(b.sharedLoad()).toEqual({ replicas: ['ra'], inflight: nodes(la) });
    expect(a.sharedLoad()).toEqual({ replicas: ['rb'], inflight: nodes(lb) });
    // B's routing cost prices A's reservation with its own: the in-flight load the statechart's decisions read.
    const inflight = b.swarmReplica[kInternals].reads().inflight;
    for (const s of la.stages) expect(inflight[s.nodeId] ?? 0).toBeGreaterThan(0);
    a.release(la.lease, { latencyMs: 12 });
    await until(() => b.sharedLoad().replicas.length === 0, 'A\'s release to reach B');
    expect(b.sharedLoad().inflight).toEqual({});
    a.route({}, { reserve: true });
    await until(() => b.sharedLoad().replicas.length === 1, 'A\'s new reservation to reach B');
    await a.close(); // says it left: B stops counting it at once, not after the lease or the hold
    await until(() => b.sharedLoad().replicas.length === 0, 'A\'s leaving to reach B', 1000);
    b.release(lb.lease);
  });
});
