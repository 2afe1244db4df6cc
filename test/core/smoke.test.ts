import { describe, expect, it } from 'vitest';
import { planSwarm, routeRequest, SwarmState } from '../../src/index.js';

describe('routeRequest', () => {
  it('routes the only copy of a one-node plan', () => {
    const plan = planSwarm([{ id: 'gpu', memoryGb: 24, score: 10 }], { models: [{ id: 'base', layers: 12 }] });
    const route = routeRequest('base', {}, SwarmState.fromPlan(plan));
    expect(route.pipelineId).toBe('base/0');
  });
});
