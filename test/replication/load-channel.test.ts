/**
 * Two replicas' load channels over an in-memory transport on one ManualClock: reservations and
 * releases reach the other's routing cost, announcements are coalesced, and a replica that falls
 * silent stops counting after its hold, long before its leases would expire
 * (docs/replication.md, "Shared load").
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, ManualClock } from '../../src/index.js';
import { LoadChannel, type LoadPart, type LoadTransport } from '../../src/replication/load-channel.js';
import { kInternals } from '../../src/runtime/internal.js';
import type { Swarm } from '../../src/runtime/swarm.js';
import { CONFIG, PROFILES } from './replicas.js';

/** A bus every channel hears (its own messages too, as NATS echoes them); `cut` drops one sender's messages. */
function bus() {
  const listeners = new Set<(data: Uint8Array) => void>();
  const cut = new Set<string>();
  const sent: string[] = [];
  const transport = (who: string): LoadTransport => ({
    publish: (data) => {
      sent.push(who);
      if (!cut.has(who)) for (const l of [...listeners]) l(data);
    },
    subscribe: (onData) => {
      listeners.add(onData);
      return () => void listeners.delete(onData);
    },
  });
  return { transport, cut, sent };
}

function replica(id: string, clock: ManualClock, transport: LoadTransport, connected = () => true): { swarm: Swarm; channel: LoadChannel } {
  const swarm = createSwarm(PROFILES, { ...CONFIG, leaseTtlMs: 30_000 }, { clock, seed: 1, leaseNamespace: `${id}:` });
  const channel = new LoadChannel({ replicaId: id, epoch: `${id}-1`, io: clock, transport, announceMs: 10, holdMs: 2000, connected });
  channel.attach(swarm[kInternals].load);
  channel.start();
  return { swarm, channel };
}

const tick = () => new Promise<void>((r) => queueMicrotask(r));
const extra = (s: Swarm) => ({ ...s[kInternals].reads().inflight });

describe('LoadChannel', () => {
  it('puts another replica\'s reservations into this one\'s routing cost, and takes them out on release', async () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    const a = replica('a', clock, b0.transport('a'));
    const b = replica('b', clock, b0.transport('b'));
    const first = b.swarm.route();
    const l1 = a.swarm.route({}, { reserve: true });
    const l2 = a.swarm.route({}, { reserve: true });
    await tick();
    const held = new Map<string, number>();
    for (const l of [l1, l2]) for (const s of l.stages) held.set(s.nodeId, (held.get(s.nodeId) ?? 0) + 1);
    expect(Object.fromEntries(b.channel.merged.entries())).toEqual(Object.fromEntries(held));
    // B prices them as A does its own: the same extra load per node.
    expect(extra(b.swarm)).toEqual(extra(a.swarm));
    expect(b.swarm.inFlight()).toBe(0); // its own reservations stay its own
    // The copy A loaded costs more on B now than when B routed first.
    expect(b.swarm.route().cost).toBeGreaterThan(first.cost);
    // The routing index and the scan agree on the merged load (the index re-ranks on a remote change).
    expect(b.swarm.route().pipelineId).toBe(b.swarm.routeByScan().pipelineId);
    expect(b.swarm.route().cost).toBe(b.swarm.routeByScan().cost);
    a.swarm.release(l1.lease, { latencyMs: 20 });
    a.swarm.release(l2.lease, { latencyMs: 20 });
    clock.advance(10);
    await tick();
    expect([...b.channel.merged.entries()]).toEqual([]);
    expect(extra(b.swarm)).toEqual({});
  });

  it('coalesces a burst into one announcement and the next changes into one at the window\'s end', async () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    const a = replica('a', clock, b0.transport('a'));
    const b = replica('b', clock, b0.transport('b'));
    await tick();
    b0.sent.length = 0;
    const leases = Array.from({ length: 5 }, () => a.swarm.route({}, { reserve: true }));
    await tick();
    expect(b0.sent).toEqual(['a']);
    for (const l of leases.slice(0, 3)) a.swarm.release(l.lease, { latencyMs: 5 });
    await tick();
    expect(b0.sent).toEqual(['a']); // within the window: waits
    clock.advance(10);
    expect(b0.sent).toEqual(['a', 'a']);
    expect(Object.fromEntries(b.channel.merged.entries())).toEqual(Object.fromEntries(a.swarm[kInternals].load.local()));
    expect(a.swarm.inFlight()).toBe(2);
  });

  it('keeps counting a live replica that holds leases, and stops within its hold once it goes silent — not at the lease expiry', async () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    const a = replica('a', clock, b0.transport('a'));
    const b = replica('b', clock, b0.transport('b'));
    a.swarm.route({}, { reserve: true });
    await tick();
    clock.advance(10_000); // A still holds its lease and says so every holdMs / 4
    expect(b.channel.merged.replicas()).toEqual(['a']);
    b0.cut.add('a'); // A dies or is cut off: nothing of it arrives any more
    clock.advance(2000 + 500); // its hold, plus one sweep of B's
    expect(b.channel.merged.replicas()).toEqual([]);
    expect(extra(b.swarm)).toEqual({});
    expect(a.swarm.inFlight()).toBe(1); // its lease (30 s) is still open
  });

  it('says nothing while cut off and tells the others it left when it closes', async () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    let online = false;
    const a = replica('a', clock, b0.transport('a'), () => online);
    const b = replica('b', clock, b0.transport('b'));
    a.swarm.route({}, { reserve: true });
    await tick();
    clock.advance(1000);
    expect(b0.sent.filter((w) => w === 'a')).toEqual([]);
    online = true;
    a.channel.changed();
    await tick();
    expect(b.channel.merged.replicas()).toEqual(['a']);
    a.channel.close();
    expect(b.channel.merged.replicas()).toEqual([]);
  });

  it('carries named parts to the others (the hook for other replicated signals)', async () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    const a = replica('a', clock, b0.transport('a'));
    const b = replica('b', clock, b0.transport('b'));
    const pending: string[] = ['gpu:abc'];
    const heard: [string, unknown][] = [];
    const part = (name: string, take: () => unknown): LoadPart => ({ name, take, receive: (replica, value) => heard.push([replica, value]) });
    a.channel.addPart(part('prefix', () => (pending.length > 0 ? pending.splice(0) : undefined)));
    b.channel.addPart(part('prefix', () => undefined));
    a.channel.changed();
    await tick();
    expect(heard).toEqual([['a', ['gpu:abc']]]);
  });

  it('prices remote reservations without watching them for stalls (a stall is a request this replica sent)', async () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    const a = replica('a', clock, b0.transport('a'));
    const b = replica('b', clock, b0.transport('b'));
    const beat = () => {
      for (const p of PROFILES) b.swarm.heartbeat(p.id);
    };
    beat(); // B watches every node
    // B sends a request of its own and it comes back: its wait on those nodes starts and ends.
    const own = b.swarm.route({}, { reserve: true });
    const held = a.swarm.route({}, { reserve: true }); // before either hears the other: the same copy
    expect(held.pipelineId).toBe(own.pipelineId);
    await tick();
    b.swarm.release(own.lease, { latencyMs: 20 });
    // B's routes must go through A's nodes: the other copy is down on B.
    const heldNodes = new Set(held.stages.map((s) => s.nodeId));
    const other = b.swarm.state().plan.pipelines.find((p) => p.id !== held.pipelineId)?.stages.find((s) => !heldNodes.has(s.nodeId));
    if (other !== undefined) b.swarm.markDown(other.nodeId);
    expect(b.swarm.route().pipelineId).toBe(held.pipelineId);
    for (let i = 0; i < 20; i++) {
      clock.advance(500); // 10 s: far past four times any node's latency; A's lease stays open
      for (const p of PROFILES) if (p.id !== other?.nodeId) b.swarm.heartbeat(p.id);
      b.swarm.route();
    }
    expect(held.stages.every((s) => b.swarm.state().nodes[s.nodeId]?.suspect !== true)).toBe(true);
    expect(held.stages.every((s) => (extra(b.swarm)[s.nodeId] ?? 0) > 0)).toBe(true);
  });

  it('counts an unreadable message and changes nothing', () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    const b = replica('b', clock, b0.transport('b'));
    b0.transport('x').publish(new TextEncoder().encode('{"v":9}'));
    expect(b.channel.counts.unreadable).toBe(1);
    expect(extra(b.swarm)).toEqual({});
  });

  it('announces a node whatever its id, "__proto__" included', async () => {
    const clock = new ManualClock(0);
    const b0 = bus();
    const make = (id: string) => {
      const swarm = createSwarm([{ id: '__proto__', memoryGb: 24, score: 2 }], { models: [{ id: 'base', kind: 'base' as const, layers: 4 }] }, { clock, seed: 1, leaseNamespace: `${id}:` });
      const channel = new LoadChannel({ replicaId: id, epoch: `${id}-1`, io: clock, transport: b0.transport(id), announceMs: 10, holdMs: 2000, connected: () => true });
      channel.attach(swarm[kInternals].load);
      channel.start();
      return { swarm, channel };
    };
    const a = make('a');
    const b = make('b');
    a.swarm.route({}, { reserve: true });
    await tick();
    expect([...b.channel.merged.entries()]).toEqual([['__proto__', 1]]);
    for (const r of [a, b]) {
      r.channel.close();
      r.swarm.stop();
    }
  });
});

