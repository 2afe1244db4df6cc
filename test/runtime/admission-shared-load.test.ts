/**
 * Admission reads the merged view once reservations are shared (docs/admission.md, "Several
 * orchestrators"): the reservations other replicas announce on a node fill its slots here too,
 * and a drop in them wakes the queue.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, swarmConfig } from '../../src/index.js';
import { kInternals } from '../../src/runtime/internal.js';

describe('admit with other replicas\' reservations', () => {
  it('counts the announced reservations against the slots, and admits when they are released', async () => {
    const swarm = createSwarm([{ id: 'a', memoryGb: 8, score: 2, latencyMs: 10, slots: 2 }], swarmConfig(4, 1), { seed: 1 });
    const load = swarm[kInternals].load;
    load.setRemote('a', 2); // another replica holds both slots
    expect(swarm.saturation().saturated).toBe(true);
    let admitted = false;
    const waiting = swarm.admit({ tokens: 8 }).then((l) => ((admitted = true), l));
    await new Promise((r) => setTimeout(r, 5));
    expect(admitted).toBe(false);
    load.setRemote('a', 1); // it released one
    const leased = await waiting;
    expect(leased.stages[0]?.nodeId).toBe('a');
    expect(swarm.saturation().saturated).toBe(true); // one local, one remote: full again
    swarm.release(leased.lease);
    swarm.stop();
  });
});
