import { describe, expect, it } from 'vitest';
import { createSwarm } from '../../src/index.js';

describe('Swarm.actor, the read-only inspection handle (docs/design.md §13)', () => {
  it('reads the statechart and its node actors but sends nothing behind it', () => {
    const swarm = createSwarm([{ id: 'gpu', memoryGb: 24, score: 10 }, { id: 'b', memoryGb: 24 }], { models: [{ id: 'base', layers: 12, pipelines: 2 }] }, { seed: 1 });
    const node = swarm.actor.system.get('node:gpu');
    expect(node?.getSnapshot().value).toBe('unmonitored');
    expect((node as unknown as Record<string, unknown>)['send']).toBeUndefined();
    expect((swarm.actor as unknown as Record<string, unknown>)['send']).toBeUndefined();
    expect(Object.isFrozen(swarm.actor)).toBe(true);
    // Telemetry still reaches the node actor through the Swarm.
    swarm.report('gpu', { latencyMs: 50 });
    expect(swarm.state().nodes['gpu']?.latencyMs).toBe(50);
    expect(swarm.actor.getPersistedSnapshot()).toMatchObject({ status: 'active' });
    swarm.stop();
  });
});
