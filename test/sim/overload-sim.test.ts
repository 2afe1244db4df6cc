/**
 * W8 in small (docs/admission.md, "Measured: W8"): the real admission in the overload simulator.
 * The 10-seed figures are bench/w8-overload.ts's; here, one short seed of each policy.
 */
import { describe, expect, it } from 'vitest';
import { runOverload, W8_ADMISSION } from '../../src/sim/load/overload-sim.js';

describe('runOverload', () => {
  it('is deterministic, and at 150% load admission keeps the critical class that no admission loses', async () => {
    const none = await runOverload({ policy: 'none', rho: 1.5, requests: 1000, seed: 3 });
    const ours = await runOverload({ policy: 'ours', rho: 1.5, requests: 1000, seed: 3 });
    expect(await runOverload({ policy: 'ours', rho: 1.5, requests: 1000, seed: 3 })).toEqual(ours);
    const [critical] = ours.classes;
    expect(critical?.good).toBe(critical?.offered);
    expect(none.classes[0]?.good).toBeLessThan(0.8 * (none.classes[0]?.offered ?? 0)); // late behind the node queues
    expect(ours.maxQueued).toBeLessThanOrEqual(W8_ADMISSION.queueSize as number);
    expect(none.maxQueued).toBe(0);
    // Every arrival is accounted for: finished in time, refused, or late.
    for (const c of ours.classes) expect(c.good + c.saturated + c.deadline).toBeLessThanOrEqual(c.offered);
  });

  it('a single FIFO queue serves every class alike: the same band, no shedding of its own', async () => {
    const fifo = await runOverload({ policy: 'fifo', rho: 1.5, requests: 1000, seed: 3 });
    const shares = fifo.classes.map((c) => c.good / c.offered);
    expect(Math.max(...shares) - Math.min(...shares)).toBeLessThan(0.25);
  });
});
