/**
 * Latency-aware in-flight accounting: a reservation costs the node's expected service time (its
 * latency estimate) times RESERVATION_SERVICE_FACTOR, and nothing without a reservation.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_PENALTIES } from '../../src/core/cost.js';
import type { NodeProfile } from '../../src/core/types.js';
import { createSwarm, ManualClock, type SwarmConfig } from '../../src/runtime/index.js';
import { inflightLoad, RESERVATION_SERVICE_FACTOR } from '../../src/runtime/inflight.js';

const one: SwarmConfig = { models: [{ id: 'base', layers: 8, pipelines: 1 }], leaseTtlMs: 1000 };

/** A swarm of one single-node copy whose node declares `latencyMs`. */
function single(latencyMs: number | undefined) {
  const node: NodeProfile = { id: 'n', memoryGb: 8, score: 4, ...(latencyMs !== undefined ? { latencyMs } : {}) };
  return createSwarm([node], one, { clock: new ManualClock(), seed: 1 });
}

describe('inflightLoad', () => {
  it('is 0 without a reservation, whatever the latency', () => {
    expect(inflightLoad(0, { alive: true, samples: 3, latencyMs: 500 })).toBe(0);
    expect(inflightLoad(0, undefined)).toBe(0);
  });

  it('charges each reservation the node latency estimate, in load units of 120 cost', () => {
    const fast = inflightLoad(1, { alive: true, samples: 1, latencyMs: 10 });
    const slow = inflightLoad(1, { alive: true, samples: 1, latencyMs: 60 });
    expect(fast * 120).toBeCloseTo(RESERVATION_SERVICE_FACTOR * 10, 12);
    expect(slow).toBeCloseTo(6 * fast, 12);
    expect(inflightLoad(3, { alive: true, samples: 1, latencyMs: 10 })).toBeCloseTo(3 * fast, 12);
  });

  it('charges a node without any latency the unknown-latency penalty', () => {
    expect(inflightLoad(1, { alive: true, samples: 0 }) * 120).toBeCloseTo(RESERVATION_SERVICE_FACTOR * DEFAULT_PENALTIES.latencyMs, 12);
    expect(inflightLoad(2, undefined, 40) * 120).toBeCloseTo(RESERVATION_SERVICE_FACTOR * 80, 12);
  });
});

describe('swarm in-flight accounting', () => {
  it('raises a slow node cost more than a fast one per reservation', () => {
    const rises = [10, 60].map((latencyMs) => {
      const swarm = single(latencyMs);
      const idle = swarm.route().cost;
      swarm.route({}, { reserve: true });
      const rise = swarm.route().cost - idle;
      expect(swarm.routeByScan().cost - idle).toBeCloseTo(rise, 9); // index and scan agree
      swarm.stop();
      return rise;
    });
    expect(rises[0]).toBeCloseTo(RESERVATION_SERVICE_FACTOR * 10, 9);
    expect(rises[1]).toBeCloseTo(RESERVATION_SERVICE_FACTOR * 60, 9);
    expect(rises[1] as number).toBeGreaterThan(rises[0] as number);
  });

  it('adds nothing without leases: routes without reserve cost the same every time', () => {
    const swarm = single(10);
    const costs = Array.from({ length: 5 }, () => swarm.route().cost);
    expect(new Set(costs).size).toBe(1);
    const lease = swarm.route({}, { reserve: true }).lease;
    swarm.release(lease);
    expect(swarm.route().cost).toBe(costs[0]); // released without a latency: back to the original design's cost, bit for bit
    swarm.stop();
  });

  it('re-prices the reservations held on a node when its latency changes', () => {
    const swarm = single(10);
    swarm.route({}, { reserve: true });
    swarm.route({}, { reserve: true });
    swarm.report('n', { latencyMs: 50, load: 0 }); // first measured sample: the EWMA is 50
    const withTwo = swarm.route().cost;
    const idle = createSwarm([{ id: 'n', memoryGb: 8, score: 4, latencyMs: 10 }], one, { clock: new ManualClock(), seed: 1 });
    idle.report('n', { latencyMs: 50, load: 0 });
    expect(withTwo - idle.route().cost).toBeCloseTo(2 * RESERVATION_SERVICE_FACTOR * 50, 9);
    expect(swarm.routeByScan().cost).toBeCloseTo(withTwo, 9);
    idle.stop();
    swarm.stop();
  });
});
