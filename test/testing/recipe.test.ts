import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createSwarm, type NodeProfile, type SwarmConfig } from '../../src/index.js';
import { pathName, runSwarmPath, swarmTestModel } from '../../src/testing/index.js';

/** The recipe of docs/machine.md, as an orchestrator author would copy it (imports made relative). */
const { models, nodes } = JSON.parse(readFileSync(new URL('../../examples/swarm.json', import.meta.url), 'utf8')) as { models: SwarmConfig['models']; nodes: NodeProfile[] };
const model = swarmTestModel(nodes, { models }, { removals: false });

describe('the hecate-swarm/testing recipe', () => {
  const paths = model.getShortestPaths();
  it('generates paths with readable names', () => {
    expect(paths.length).toBeGreaterThan(10);
    for (const name of paths.map(pathName)) expect(name).toMatch(/^(node\.(down|alive)\([a-z-]+\)|swarm\.stop)( → (node\.(down|alive)\([a-z-]+\)|swarm\.stop))* ⇒ (healthy|degraded|failed|stopped)$/);
    expect(new Set(paths.map(pathName)).size).toBe(paths.length);
  });
  for (const path of paths.slice(0, 12)) {
    it(pathName(path), () => runSwarmPath(path, createSwarm(nodes, { models }, { seed: 1 })));
  }
});
