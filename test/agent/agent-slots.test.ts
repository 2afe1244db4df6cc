/**
 * `startAgent({ slots })`: stage calls beyond the slots wait in arrival order, on the agent's
 * injected clock (nothing here waits on time: the clock moves when the test advances it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { postStage } from './stage-messages.js';
import { freePort } from '../replication/nats-server.js';
import { waitFor } from '../orchestrator/processes.js';

let agent: RunningAgent | undefined;
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
});

const call = async (url: string, sessionId: string): Promise<{ ms: number }> => (await postStage(`${url}/v1/stage`, { sessionId, modelId: 'base', layerStart: 0, layerEnd: 5, step: 0, fresh: true, tokens: 1, input: 7, replay: [] })).body;

describe('startAgent({ slots })', () => {
  it('runs one call at a time with 1 slot: the second waits for the first, in arrival order', async () => {
    const clock = new ManualClock(0);
    // No orchestrator: the join keeps retrying in the background, which the stage server does not need.
    agent = await startAgent({ id: 's1', memoryGb: 4, score: 1, join: `http://127.0.0.1:${await freePort()}`, perLayerMs: 10, jitter: 0, slots: 1, clock });
    const done: string[] = [];
    const first = call(agent.url, 'a').then((r) => (done.push('a'), r));
    await waitFor('the first call holds the slot', () => (clock.pending() >= 2 ? true : undefined), 5000, 5);
    const second = call(agent.url, 'b').then((r) => (done.push('b'), r));
    const health = async () => (await fetch(`${agent?.url}/v1/health`)).json() as Promise<{ running: number; queued: number }>;
    await waitFor('the second call queued', async () => ((await health()).queued === 1 ? true : undefined), 5000, 10);
    expect((await health()).running).toBe(1);
    clock.advance(50); // the first call's 5 layers × 10 ms
    const a = await first;
    expect(done).toEqual(['a']);
    expect(a.ms).toBe(50);
    clock.advance(50);
    const b = await second;
    expect(done).toEqual(['a', 'b']);
    expect(b.ms).toBe(100); // its 50 ms after waiting 50 ms for the slot
  });
});
