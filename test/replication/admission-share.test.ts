/**
 * A replica admits its share of the capacity, 1 ÷ the live replicas, until reservations are
 * shared (docs/admission.md, "Several orchestrators"). No NATS here: the share on a local swarm.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, ManualClock, type NodeProfile, type SwarmConfig } from '../../src/index.js';
import { replicaShare, shareAdmission } from '../../src/replication/admission-share.js';

const twins: NodeProfile[] = [
  { id: 'a', memoryGb: 8, slots: 2 },
  { id: 'b', memoryGb: 8, slots: 2 },
];
const config: SwarmConfig = { models: [{ id: 'base', layers: 8, pipelines: 2 }] };

describe('a replica’s admission share', () => {
  it('is 1 ÷ the live replicas (at least one)', () => {
    expect([0, 1, 2, 3, 4].map(replicaShare)).toEqual([1, 1, 0.5, 1 / 3, 0.25]);
  });

  it('caps the reservations at the share of the capacity, and a larger share serves the queue', async () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    shareAdmission(swarm, 2); // capacity 4, two live replicas: this one admits 2
    await swarm.admit();
    await swarm.admit();
    let third = false;
    void swarm.admit().then(() => (third = true));
    await Promise.resolve();
    expect(swarm.saturation()).toMatchObject({ share: 0.5, saturated: true, saturation: 1, queued: 1 });
    expect(third).toBe(false);
    shareAdmission(swarm, 1); // the other replica left
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(third).toBe(true);
    expect(swarm.saturation()).toMatchObject({ share: 1, inFlight: 3, saturated: false });
    swarm.stop();
  });

  it('keeps a share the config fixes', () => {
    const swarm = createSwarm(twins, { ...config, admission: { share: 0.25 } }, { clock: new ManualClock(), seed: 1 });
    shareAdmission(swarm, 2);
    expect(swarm.saturation().share).toBe(0.25);
    swarm.stop();
  });
});
