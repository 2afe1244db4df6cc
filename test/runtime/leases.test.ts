import { describe, expect, it } from 'vitest';
import { SwarmError } from '../../src/core/errors.js';
import type { NodeProfile } from '../../src/core/types.js';
import { createSwarm, ManualClock, type SwarmConfig } from '../../src/runtime/index.js';
import { inflightLoad } from '../../src/runtime/inflight.js';
import { caught } from './fixtures.js';

/** Two single-node copies of equal nodes, so one reservation decides the next route. */
const twins: NodeProfile[] = [
  { id: 'a', memoryGb: 8, score: 4, latencyMs: 10 },
  { id: 'b', memoryGb: 8, score: 4, latencyMs: 10 },
];
const config: SwarmConfig = { models: [{ id: 'base', layers: 8, pipelines: 2 }], leaseTtlMs: 1000 };

describe('swarm.route with reserve', () => {
  it('returns a lease on the route nodes that the very next route sees', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const first = swarm.route({}, { reserve: true });
    expect(first.lease.nodes).toEqual(first.stages.map((s) => s.nodeId));
    expect(first.lease.modelId).toBe('base');
    const second = swarm.route({}, { reserve: true });
    expect(second.pipelineId).not.toBe(first.pipelineId);
    expect(swarm.inFlight()).toBe(2);
    swarm.stop();
  });

  it('raises the cost of a reserved copy by w_c · inflightLoad(count, telemetry) · 120', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const idle = swarm.route({});
    swarm.route({}, { reserve: true });
    swarm.route({}, { reserve: true }); // one reservation on each twin now
    const loaded = swarm.route({});
    expect(loaded.cost).toBeCloseTo(idle.cost + inflightLoad(1, swarm.state().nodes[loaded.stages[0]?.nodeId as string]) * 120, 9);
    expect(swarm.routeByScan({}).cost).toBeCloseTo(loaded.cost, 9);
    swarm.stop();
  });

  it('without reserve behaves like the original design: no lease, nothing in flight, same choice every time', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const routes = Array.from({ length: 5 }, () => swarm.route({}));
    expect(routes.every((r) => !('lease' in r) && r.pipelineId === routes[0]?.pipelineId)).toBe(true);
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });
});

describe('swarm.release', () => {
  it('ends the reservation and feeds the latency into the nodes EWMA', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const route = swarm.route({}, { reserve: true });
    const node = route.stages[0]?.nodeId as string;
    const before = swarm.state().nodes[node];
    swarm.release(route.lease, { latencyMs: 40 });
    const after = swarm.state().nodes[node];
    expect(swarm.inFlight()).toBe(0);
    expect(after?.samples).toBe((before?.samples ?? 0) + 1);
    expect(after?.latencyMs).toBe(40); // first measured sample initialises the EWMA
    swarm.stop();
  });

  it('with ok: false ends the reservation and feeds the failure penalty, not the observed latency', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const route = swarm.route({}, { reserve: true });
    const node = route.stages[0]?.nodeId as string;
    swarm.release(route.lease, { latencyMs: 5, ok: false });
    expect(swarm.inFlight()).toBe(0);
    expect(swarm.state().nodes[node]?.latencyMs).toBe(1000); // the default failurePenaltyMs
    swarm.stop();
  });

  it('refuses a second release of the same lease with UnknownLease', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const route = swarm.route({}, { reserve: true });
    swarm.release(route.lease);
    const error = caught(() => swarm.release(route.lease)) as SwarmError;
    expect(error).toBeInstanceOf(SwarmError);
    expect(error.code).toBe('UnknownLease');
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('refuses a lease it never issued with UnknownLease, naming it', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    swarm.route({}, { reserve: true });
    const error = caught(() => swarm.release({ id: 'lease-999', modelId: 'base', nodes: ['a'], expiresAt: 0 })) as SwarmError;
    expect(error.code).toBe('UnknownLease');
    expect(error.message).toContain('lease-999');
    expect(swarm.inFlight()).toBe(1); // the real lease is untouched
    swarm.stop();
  });

  it('rejects a bad latency and keeps the lease', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const route = swarm.route({}, { reserve: true });
    expect((caught(() => swarm.release(route.lease, { latencyMs: Number.NaN })) as SwarmError).code).toBe('BadTelemetry');
    expect(swarm.inFlight()).toBe(1);
    swarm.release(route.lease, { latencyMs: 3 });
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });
});

describe('lease expiry', () => {
  it('expires a lease never released after leaseTtlMs on the injected clock', () => {
    const clock = new ManualClock(5000);
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    const first = swarm.route({}, { reserve: true });
    expect(first.lease.expiresAt).toBe(6000);
    clock.advance(999);
    expect(swarm.inFlight()).toBe(1);
    clock.advance(1);
    expect(swarm.inFlight()).toBe(0);
    // The copy it pinned is free again: the next route is the first route again.
    expect(swarm.route({}).pipelineId).toBe(first.pipelineId);
    expect((caught(() => swarm.release(first.lease)) as SwarmError).code).toBe('UnknownLease');
    swarm.stop();
  });

  it('expires leases in issue order and keeps the younger ones', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    const old = swarm.route({}, { reserve: true });
    clock.advance(600);
    const young = swarm.route({}, { reserve: true });
    clock.advance(500); // old is 1100 ms old, young 500 ms
    expect(swarm.inFlight()).toBe(1);
    expect((caught(() => swarm.release(old.lease)) as SwarmError).code).toBe('UnknownLease');
    swarm.release(young.lease);
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('refuses the release of an expired lease even before anything swept it', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    const route = swarm.route({}, { reserve: true });
    clock.advance(1000);
    expect((caught(() => swarm.release(route.lease)) as SwarmError).code).toBe('UnknownLease');
    swarm.stop();
  });

  it('treats a failed release as a latency penalty on every live node of the route', () => {
    const swarm = createSwarm(twins, { ...config, failurePenaltyMs: 800 }, { seed: 1 });
    const route = swarm.route({}, { reserve: true });
    swarm.release(route.lease, { ok: false, latencyMs: 3 });
    for (const s of route.stages) expect(swarm.state().nodes[s.nodeId]?.latencyMs).toBe(800);
    expect(swarm.route().pipelineId).not.toBe(route.pipelineId);
    swarm.stop();
  });

  it('refuses a bad failurePenaltyMs and a non-object outcome', () => {
    expect((caught(() => createSwarm(twins, { ...config, failurePenaltyMs: -1 })) as SwarmError).code).toBe('InvalidInput');
    const swarm = createSwarm(twins, config, { seed: 1 });
    const route = swarm.route({}, { reserve: true });
    expect((caught(() => swarm.release(route.lease, null as never)) as SwarmError).code).toBe('BadTelemetry');
    expect(swarm.inFlight()).toBe(1); // nothing changed: the lease is still held
    swarm.stop();
  });
});

describe('leases across a node removed and added back', () => {
  it('a removed node leaves every open lease: the same id added back counts none of them', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const old = swarm.route({}, { reserve: true });
    expect(old.lease.nodes).toEqual(['a']);
    swarm.removeNode('a');
    swarm.addNode({ id: 'a', memoryGb: 8, score: 4, latencyMs: 10 });
    // Nothing in flight on the new "a": with "b" made dear, "a"'s copy costs what it costs idle.
    const reference = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    reference.report('b', { latencyMs: 1000 });
    swarm.report('b', { latencyMs: 1000 });
    expect(swarm.route({}).stages[0]?.nodeId).toBe('a');
    const idleCost = reference.route({}).cost;
    expect(swarm.route({}).cost).toBeCloseTo(idleCost, 9);
    expect(swarm.route({}, { reserve: true }).lease.nodes).toEqual(['a']);
    swarm.release(old.lease, { latencyMs: 5000 }); // still releasable, but it no longer touches "a"
    expect(swarm.state().nodes.a?.samples).toBe(0);
    expect(swarm.inFlight()).toBe(1);
    // The new lease still counts on "a", once.
    expect(swarm.route({}).cost).toBeCloseTo(idleCost + inflightLoad(1, swarm.state().nodes.a) * 120, 9);
    reference.stop();
    swarm.stop();
  });
});

describe('release sampling window (releaseSampleMs)', () => {
  /** One single-node copy, so every lease is on node "a". */
  const solo: NodeProfile[] = [{ id: 'a', memoryGb: 8, score: 4, latencyMs: 10 }];
  const soloConfig: SwarmConfig = { models: [{ id: 'base', layers: 8, pipelines: 1 }], releaseSampleMs: 100 };
  const releaseWith = (swarm: ReturnType<typeof createSwarm>, latencyMs: number): void => swarm.release(swarm.route({}, { reserve: true }).lease, { latencyMs });

  it('feeds the first release at once and the next ones as their mean, once per window', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(solo, soloConfig, { clock, seed: 1 });
    releaseWith(swarm, 40); // quiet before: fed at once, initialises the EWMA
    expect(swarm.state().nodes.a?.latencyMs).toBe(40);
    clock.advance(30);
    releaseWith(swarm, 10);
    clock.advance(30);
    releaseWith(swarm, 20);
    expect(swarm.state().nodes.a?.latencyMs).toBe(40); // held: the window is not over
    expect(swarm.state().nodes.a?.samples).toBe(1);
    clock.advance(40); // 100 ms since the last feed
    releaseWith(swarm, 90);
    // One sample, the mean of 10, 20 and 90 (40), with alpha 0.3: 0.3 · 40 + 0.7 · 40.
    expect(swarm.state().nodes.a?.samples).toBe(2);
    expect(swarm.state().nodes.a?.latencyMs).toBeCloseTo(40, 9);
    clock.advance(100);
    releaseWith(swarm, 140); // a window later with nothing held: fed alone, at once
    expect(swarm.state().nodes.a?.latencyMs).toBeCloseTo(0.3 * 140 + 0.7 * 40, 9);
    swarm.stop();
  });

  it('with releaseSampleMs 0 feeds every release alone', () => {
    const swarm = createSwarm(solo, { ...soloConfig, releaseSampleMs: 0 }, { clock: new ManualClock(), seed: 1 });
    releaseWith(swarm, 40);
    releaseWith(swarm, 10);
    expect(swarm.state().nodes.a?.samples).toBe(2);
    expect(swarm.state().nodes.a?.latencyMs).toBeCloseTo(0.3 * 10 + 0.7 * 40, 9);
    swarm.stop();
  });

  it('drops what a node had pending when it goes down', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(solo, soloConfig, { clock, seed: 1 });
    releaseWith(swarm, 40);
    releaseWith(swarm, 400); // held
    swarm.markDown('a');
    swarm.markAlive('a');
    clock.advance(100);
    releaseWith(swarm, 40); // fed at once and alone: the 400 from before the death is gone
    expect(swarm.state().nodes.a?.latencyMs).toBeCloseTo(40, 9);
    swarm.stop();
  });

  it('after a quiet gap feeds what was held on its own, then the new release alone', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(solo, soloConfig, { clock, seed: 1 });
    releaseWith(swarm, 40); // fed at once
    clock.advance(10);
    releaseWith(swarm, 2000);
    clock.advance(10);
    releaseWith(swarm, 2000); // both held
    clock.advance(3_600_000);
    releaseWith(swarm, 20);
    expect(swarm.state().nodes.a?.samples).toBe(3);
    expect(swarm.state().nodes.a?.latencyMs).toBeCloseTo(0.3 * 20 + 0.7 * (0.3 * 2000 + 0.7 * 40), 9);
    swarm.stop();
  });

  it('ends the window when the clock steps back instead of holding samples until it catches up', () => {
    let t = 1_000_000;
    const swarm = createSwarm(solo, soloConfig, { clock: { now: () => t }, seed: 1 });
    releaseWith(swarm, 40); // fed at once
    t += 10;
    releaseWith(swarm, 500); // held
    t = 0; // the wall clock stepped back (NTP)
    releaseWith(swarm, 100);
    expect(swarm.state().nodes.a?.samples).toBe(3);
    expect(swarm.state().nodes.a?.latencyMs).toBeCloseTo(0.3 * 100 + 0.7 * (0.3 * 500 + 0.7 * 40), 9);
    t += 10;
    releaseWith(swarm, 100); // a new window started at 0: held again
    expect(swarm.state().nodes.a?.samples).toBe(3);
    swarm.stop();
  });

  it('feeds a failed release at once, even inside an open window', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(solo, soloConfig, { clock, seed: 1 });
    releaseWith(swarm, 40); // fed at once: the window is open now
    clock.advance(10);
    swarm.release(swarm.route({}, { reserve: true }).lease, { ok: false });
    expect(swarm.state().nodes.a?.samples).toBe(2);
    expect(swarm.state().nodes.a?.latencyMs).toBeCloseTo(0.3 * 1000 + 0.7 * 40, 9);
    swarm.stop();
  });

  it('forgets what a removed node had pending: the same id added back starts with no window', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(twins, { ...config, releaseSampleMs: 100 }, { clock, seed: 1 });
    const onA = () => {
      for (let i = 0; i < 10; i++) {
        const route = swarm.route({}, { reserve: true });
        if (route.lease.nodes.includes('a')) return route;
      }
      throw new Error('no route through node "a" in 10 tries');
    };
    swarm.release(onA().lease, { latencyMs: 40 }); // fed at once
    swarm.release(onA().lease, { latencyMs: 400 }); // held
    swarm.removeNode('a');
    swarm.addNode({ id: 'a', memoryGb: 8, score: 4, latencyMs: 10 });
    swarm.release(onA().lease, { latencyMs: 30 }); // a new node: fed at once, alone
    expect(swarm.state().nodes.a?.samples).toBe(1);
    expect(swarm.state().nodes.a?.latencyMs).toBe(30);
    swarm.stop();
  });

  it('refuses a negative or non-finite releaseSampleMs, naming the field', () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, '100' as never]) {
      const error = caught(() => createSwarm(solo, { ...soloConfig, releaseSampleMs: bad })) as SwarmError;
      expect(error.code).toBe('InvalidInput');
      expect(error.message).toContain('releaseSampleMs');
    }
  });
});
