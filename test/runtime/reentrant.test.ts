import { describe, expect, it } from 'vitest';
import { createSwarm, SwarmError, type NodeProfile, type SwarmConfig } from '../../src/index.js';

const profiles: NodeProfile[] = [{ id: 'a', memoryGb: 24 }, { id: 'b', memoryGb: 24 }, { id: 'c', memoryGb: 24 }];
const config: SwarmConfig = { models: [{ id: 'base', layers: 12, pipelines: 3 }] };

describe('a lifecycle command from inside a swarm.on handler', () => {
  it('is refused, naming the call, and changes nothing; after the handler it returns what it decided', async () => {
    const outside = createSwarm(profiles, config, { seed: 1 });
    outside.markDown('a');
    const expected = outside.markDown('b');
    const inside = createSwarm(profiles, config, { seed: 1 });
    let refused: unknown;
    let later: Promise<unknown> | undefined;
    inside.on('node.down', (e) => {
      if (e.nodeId !== 'a') return;
      try {
        inside.markDown('b');
      } catch (error) {
        refused = error;
      }
      later = new Promise((resolve) => queueMicrotask(() => resolve(inside.markDown('b'))));
    });
    inside.markDown('a');
    expect(refused).toBeInstanceOf(SwarmError);
    expect((refused as SwarmError).message).toMatch(/^markDown called from inside a swarm\.on handler/);
    expect(await later).toEqual(expected);
  });
});
