/**
 * An agent's `slots` reach the orchestrator's swarm through its join, so admission counts them
 * (docs/admission.md); a join with bad slots is refused naming the field.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { waitFor } from './processes.js';

let orchestrator: RunningOrchestrator | undefined;
let agent: RunningAgent | undefined;
afterEach(async () => {
  await agent?.stop();
  await orchestrator?.close();
  agent = undefined;
  orchestrator = undefined;
});

const post = async (base: string, path: string, body: unknown): Promise<{ status: number; body: any }> => {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
};

describe('slots in the join', () => {
  it("declares the agent's slots to the swarm: its capacity and saturation count them", async () => {
    const clock = new ManualClock(1_000_000);
    orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: 4, pipelines: 1 }], clock });
    agent = await startAgent({ id: 'g1', memoryGb: 8, score: 1, join: orchestrator.url, perLayerMs: 1, jitter: 0, slots: 3, clock });
    await agent.joined;
    const o = orchestrator;
    const swarm = await waitFor('the swarm planned', () => o.swarm(), 5000, 10);
    expect(swarm.node('g1')?.profile.slots).toBe(3);
    expect(swarm.saturation()).toMatchObject({ capacity: 3, saturated: false });
  });

  it('refuses slots that are not a positive integer, naming the field', async () => {
    orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: 4, pipelines: 1 }], clock: new ManualClock(0) });
    const r = await post(orchestrator.url, '/v1/nodes', { id: 'n1', memoryGb: 8, slots: 0, url: 'http://127.0.0.1:9' });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(/slots/);
  });
});
