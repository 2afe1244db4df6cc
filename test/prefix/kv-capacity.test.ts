/** Each copy's KV capacity (docs/prefix-cache.md, "Capacity"): the memory its weights leave, split on shared nodes. */
import { describe, expect, it } from 'vitest';
import { kvCapacities, memoryReader } from '../../src/prefix/kv-capacity.js';
import { DEFAULT_KV_GB_PER_TOKEN } from '../../src/prefix/prefix-cache-options.js';
import type { SwarmPlan } from '../../src/core/types.js';
import { planSwarm, validatePlan } from '../../src/core/index.js';

describe('kvCapacities', () => {
  it('gives a one-node copy what its weights leave, at the default KV per token', () => {
    const plan: SwarmPlan = { models: [{ id: 'm', layers: 8 }], pipelines: [{ id: 'm/0', modelId: 'm', stages: [{ nodeId: 'a', layerStart: 0, layerEnd: 8 }] }] };
    expect(kvCapacities(plan, memoryReader([{ id: 'a', memoryGb: 16 }])).get('m/0')).toBe(Math.floor(8 / DEFAULT_KV_GB_PER_TOKEN));
  });

  it('holds as many tokens as its tightest stage (a stage stores its layers\' share of a token)', () => {
    const plan: SwarmPlan = {
      models: [{ id: 'm', layers: 8, kvGbPerToken: 0.001 }],
      pipelines: [{ id: 'm/0', modelId: 'm', stages: [{ nodeId: 'a', layerStart: 0, layerEnd: 6 }, { nodeId: 'b', layerStart: 6, layerEnd: 8 }] }],
    };
    // a: 8 - 6 = 2 GB for 6/8 of a token's 0.001 GB -> 2666; b: 3 - 2 = 1 GB for 2/8 -> 4000.
    expect(kvCapacities(plan, memoryReader([{ id: 'a', memoryGb: 8 }, { id: 'b', memoryGb: 3 }])).get('m/0')).toBe(2666);
  });

  it('splits a shared node: each copy its reserve, the rest by weights', () => {
    const plan: SwarmPlan = {
      models: [{ id: 'x', layers: 4, layerGb: 1, kvReserveGb: 0.5, kvGbPerToken: 0.001 }, { id: 'y', layers: 2, layerGb: 2, kvGbPerToken: 0.001 }],
      pipelines: [
        { id: 'x/0', modelId: 'x', stages: [{ nodeId: 'n', layerStart: 0, layerEnd: 4 }] },
        { id: 'y/0', modelId: 'y', stages: [{ nodeId: 'n', layerStart: 0, layerEnd: 2 }] },
      ],
    };
    // n: 16 GB, weights 4 + 4 = 8, reserves 2 (x) + 0 (y), surplus 6 split 4:4 -> x 2 + 3 = 5 GB, y 3 GB.
    const caps = kvCapacities(plan, memoryReader([{ id: 'n', memoryGb: 16 }]));
    expect(caps.get('x/0')).toBe(5000);
    expect(caps.get('y/0')).toBe(3000);
  });

  it('gives 0 to a copy through a node it does not know, and to one whose weights fill the node', () => {
    const plan: SwarmPlan = {
      models: [{ id: 'm', layers: 4 }],
      pipelines: [
        { id: 'm/0', modelId: 'm', stages: [{ nodeId: 'ghost', layerStart: 0, layerEnd: 4 }] },
        { id: 'm/1', modelId: 'm', stages: [{ nodeId: 'full', layerStart: 0, layerEnd: 4 }] },
      ],
    };
    const caps = kvCapacities(plan, memoryReader([{ id: 'full', memoryGb: 4 }]));
    expect(caps.get('m/0')).toBe(0);
    expect(caps.get('m/1')).toBe(0);
  });

  it('the plan keeps a model\'s kvGbPerToken, and refuses one that is not a number above 0 and at most 1', () => {
    const models = [{ id: 'm', layers: 4, kvGbPerToken: 0.0005 }];
    const plan = planSwarm([{ id: 'a', memoryGb: 8 }], { models });
    expect(plan.models[0]?.kvGbPerToken).toBe(0.0005);
    expect(kvCapacities(plan, memoryReader([{ id: 'a', memoryGb: 8 }])).get(plan.pipelines[0]?.id as string)).toBe(8000);
    for (const bad of [0, -1, 2, Number.NaN]) {
      const issues = validatePlan({ ...plan, models: [{ ...plan.models[0], id: 'm', layers: 4, kvGbPerToken: bad }] }, [{ id: 'a', memoryGb: 8 }]);
      expect(issues.some((i) => i.message.includes('"kvGbPerToken"'))).toBe(true);
    }
  });
});
