import { describe, expect, it } from 'vitest';
import { EXPIRY_SLICE } from '../../src/runtime/lease-table.js';
import { caught, createSwarm, ManualClock, SwarmError, type TimeSource, type NodeProfile, type SwarmConfig } from './fixtures.js';

/** A clock the test moves freely, backwards too, or makes return anything. */
class FreeClock implements TimeSource {
  constructor(public value: unknown = 0) {}
  now(): number {
    return this.value as number;
  }
}

const twins: NodeProfile[] = [
  { id: 'a', memoryGb: 8, score: 4, latencyMs: 10 },
  { id: 'b', memoryGb: 8, score: 4, latencyMs: 10 },
];
const config: SwarmConfig = { models: [{ id: 'base', layers: 8, pipelines: 2 }], leaseTtlMs: 1000 };

describe('leases and a clock that misbehaves', () => {
  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, undefined, '12'])('refuses a clock reading of %s with a SwarmError naming the clock, changing nothing', (bad) => {
    const clock = new FreeClock(0);
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    const lease = swarm.route({}, { reserve: true }).lease;
    clock.value = bad;
    const error = caught(() => swarm.route({}, { reserve: true })) as SwarmError;
    expect(error).toBeInstanceOf(SwarmError);
    expect(error.code).toBe('InvalidInput');
    expect(error.message).toContain('clock');
    clock.value = 10;
    expect(swarm.inFlight()).toBe(1);
    swarm.release(lease);
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('expires by time lived, not issue order or wall readings: a clock stepping back neither extends nor shortens a lease', () => {
    const clock = new FreeClock(10_000);
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    const first = swarm.route({}, { reserve: true }).lease; // lives 1000 ms from here
    clock.value = 10_900;
    expect(swarm.inFlight()).toBe(1); // 900 ms lived
    clock.value = 5_000; // steps back: no time passes
    const second = swarm.route({}, { reserve: true }).lease;
    expect(second.expiresAt).toBeLessThan(first.expiresAt); // a later lease with an earlier expiry
    clock.value = 5_100; // the first has lived its 1000 ms, the second 100 ms
    expect(swarm.inFlight()).toBe(1);
    expect((caught(() => swarm.release(first)) as SwarmError).code).toBe('UnknownLease');
    clock.value = 6_000; // the second reaches its expiresAt
    expect(swarm.inFlight()).toBe(0);
    expect((caught(() => swarm.release(second)) as SwarmError).code).toBe('UnknownLease');
    swarm.stop();
  });

  it('never resurrects an expired lease when the clock steps back, nor strands one issued before a jump', () => {
    const clock = new FreeClock(0);
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    const lease = swarm.route({}, { reserve: true }).lease;
    clock.value = 1_000;
    expect(swarm.inFlight()).toBe(0); // expired
    clock.value = 0; // back before its expiry: still expired
    expect(swarm.inFlight()).toBe(0);
    expect((caught(() => swarm.release(lease)) as SwarmError).code).toBe('UnknownLease');
    clock.value = 1e12; // a jump far ahead…
    const during = swarm.route({}, { reserve: true }).lease;
    clock.value = 50; // …and back: the lease still lives its 1000 ms of steady time, no more
    expect(swarm.inFlight()).toBe(1);
    clock.value = 1_050;
    expect(swarm.inFlight()).toBe(0);
    expect((caught(() => swarm.release(during)) as SwarmError).code).toBe('UnknownLease');
    swarm.stop();
  });

  it('expires a mass of leases in bounded slices, and inFlight() counts what is really in flight meanwhile', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    const n = 3 * EXPIRY_SLICE + 10;
    for (let i = 0; i < n; i++) swarm.route({}, { reserve: true });
    clock.advance(500);
    const young = swarm.route({}, { reserve: true }).lease;
    clock.advance(600); // all but the young one are past their expiry
    expect(swarm.inFlight()).toBe(1);
    // Each call sweeps at most one slice; within a few calls every expired lease is gone.
    for (let i = 0; i < 4; i++) swarm.route({});
    expect(swarm.inFlight()).toBe(1);
    swarm.release(young);
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('inFlight() after stop() throws Stopped', () => {
    const swarm = createSwarm(twins, config, { seed: 1 });
    swarm.stop();
    expect((caught(() => swarm.inFlight()) as SwarmError).code).toBe('Stopped');
  });
});

describe('inputs are read once, a failed call changes nothing, results are frozen', () => {
  it('reads a sample once: a getter that turns NaN after the check cannot poison the EWMA', () => {
    const swarm = createSwarm(twins, config, { seed: 1 });
    let reads = 0;
    const sample = {
      get load() {
        return reads++ === 0 ? 0.5 : Number.NaN;
      },
    };
    const t = swarm.report('a', sample);
    expect(reads).toBe(1);
    expect(t.load).toBe(0.5);
    expect(swarm.route().cost).not.toBeNaN();
    swarm.stop();
  });

  it('a throwing getter in release’s outcome leaves the lease open', () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const lease = swarm.route({}, { reserve: true }).lease;
    const outcome = {
      get latencyMs(): number {
        throw new Error('boom');
      },
    };
    expect(() => swarm.release(lease, outcome)).toThrow('boom');
    expect(swarm.inFlight()).toBe(1);
    swarm.release(lease, { latencyMs: 5 });
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('reads a profile once: addNode keeps the values it checked', () => {
    const swarm = createSwarm(twins, config, { seed: 1 });
    let reads = 0;
    const profile = {
      id: 'c',
      get memoryGb() {
        return reads++ === 0 ? 8 : Number.NaN;
      },
    };
    swarm.addNode(profile);
    expect(reads).toBe(1);
    expect(swarm.status()).toBe('healthy');
    swarm.stop();
  });

  it('hands out frozen results: report, markDown, addNode, removeNode, route leases, state', () => {
    const swarm = createSwarm(twins, config, { seed: 1 });
    const t = swarm.report('a', { load: 0.2 });
    expect(Object.isFrozen(t)).toBe(true);
    expect(() => {
      (t as { alive: boolean }).alive = false;
    }).toThrow(TypeError);
    expect(swarm.state().nodes['a']?.alive).toBe(true);
    const growth = swarm.addNode({ id: 'c', memoryGb: 8, score: 4 });
    expect(Object.isFrozen(growth) && Object.isFrozen(growth.pipelines)).toBe(true);
    const rescue = swarm.markDown('a');
    expect(Object.isFrozen(rescue) && Object.isFrozen(rescue.recoveries)).toBe(true);
    const retirement = swarm.removeNode('c');
    expect(Object.isFrozen(retirement) && Object.isFrozen(retirement.relocated)).toBe(true);
    const leased = swarm.route({}, { reserve: true });
    expect(Object.isFrozen(leased.lease) && Object.isFrozen(leased.lease.nodes)).toBe(true);
    expect(Object.isFrozen(swarm.state().plan.pipelines)).toBe(true);
    swarm.stop();
  });
});
