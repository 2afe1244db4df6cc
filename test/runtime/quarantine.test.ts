import { describe, expect, it } from 'vitest';
import { createSwarm, SwarmError, type NodeProfile, type SwarmConfig, type SwarmEmitted } from '../../src/index.js';
import { applyEvent, persistSwarm, restoreSwarm, type PersistedSwarm } from '../../src/persistence/index.js';

/** Quarantine: down with cause `integrity`, written by the Swarm statechart only (docs/security.md, "Verification"). */
const profiles: NodeProfile[] = [
  { id: 'gpu', memoryGb: 24, score: 10 },
  { id: 'desktop', memoryGb: 16, score: 5 },
  { id: 'phone', memoryGb: 8, score: 1 },
];
const config: SwarmConfig = { models: [{ id: 'base', layers: 12, pipelines: 2 }] };

describe('swarm.quarantine', () => {
  it('takes the node down with cause integrity, rescues it, emits it; a manual mark keeps the cause; markAlive ends it', () => {
    const swarm = createSwarm(profiles, config, { seed: 1 });
    const seen: SwarmEmitted[] = [];
    swarm.on('node.down', (e) => seen.push(e));
    const rescue = swarm.quarantine('gpu');
    expect(rescue.nodeId).toBe('gpu');
    expect(swarm.node('gpu')).toMatchObject({ state: 'down', cause: 'integrity' });
    expect(seen).toMatchObject([{ type: 'node.down', nodeId: 'gpu', cause: 'integrity' }]);
    expect(swarm.state().nodes['gpu']?.alive).toBe(false);
    // The node actor is down too, and stays down: no ban ends a quarantine.
    swarm.markDown('gpu');
    expect(swarm.node('gpu')?.cause).toBe('integrity');
    expect(swarm.quarantine('gpu').recoveries).toEqual([]); // already down: a no-op
    swarm.markAlive('gpu');
    expect(swarm.node('gpu')).toMatchObject({ state: 'alive' });
    expect(swarm.node('gpu')?.cause).toBeUndefined();
    expect(() => swarm.quarantine('nobody')).toThrow(SwarmError);
    swarm.stop();
  });

  it('survives persistSwarm / restoreSwarm, and the wire form applyEvent takes', () => {
    const a = createSwarm(profiles, config, { seed: 1 });
    a.quarantine('desktop');
    const saved = JSON.parse(JSON.stringify(persistSwarm(a))) as PersistedSwarm;
    a.stop();
    const b = restoreSwarm(profiles, config, saved);
    expect(b.node('desktop')).toMatchObject({ state: 'down', cause: 'integrity' });
    b.markAlive('desktop');
    applyEvent(b, { type: 'node.down', nodeId: 'desktop', cause: 'integrity' });
    expect(b.node('desktop')?.cause).toBe('integrity');
    b.stop();
  });

  it('restores a save from before the cause existed (no quarantined set) with none quarantined', () => {
    const a = createSwarm(profiles, config, { seed: 1 });
    a.markDown('phone');
    const saved = JSON.parse(JSON.stringify(persistSwarm(a))) as Record<string, any>;
    a.stop();
    delete saved['snapshot'].context.quarantined;
    const b = restoreSwarm(profiles, config, saved as PersistedSwarm);
    expect(b.node('phone')).toMatchObject({ state: 'down', cause: 'manual' });
    b.stop();
  });

  it.each([
    ['an alive member', (ids: string[]) => ids.filter((id) => id !== 'desktop')],
    ['a stranger', () => ['nobody']],
  ])('refuses a save whose quarantined set names %s, naming the field', (_what, values) => {
    const a = createSwarm(profiles, config, { seed: 1 });
    a.quarantine('desktop');
    const saved = JSON.parse(JSON.stringify(persistSwarm(a))) as Record<string, any>;
    a.stop();
    saved['snapshot'].context.quarantined = { $: 'Set', values: values(profiles.map((p) => p.id)) };
    expect(() => restoreSwarm(profiles, config, saved as PersistedSwarm)).toThrow(/snapshot\.context\.quarantined/);
  });
});
