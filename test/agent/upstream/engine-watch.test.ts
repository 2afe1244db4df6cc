import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchEngine } from '../../../src/agent/upstream/engine-watch.js';
import { engineRequest } from '../../../src/agent/upstream/upstream-route.js';
import { ManualClock } from '../../../src/runtime/clock.js';
import { startScriptedUpstream, type ScriptedUpstream } from './scripted-upstream.js';

let engine: ScriptedUpstream;
beforeAll(async () => {
  engine = await startScriptedUpstream();
});
afterAll(async () => {
  await engine.close();
});

describe('watchEngine', () => {
  it("follows the engine's /health and reads its load from /metrics; a failed call is unhealthy until the next probe", async () => {
    const watch = watchEngine({ url: engine.url, clock: new ManualClock(0), slots: 4 });
    await watch.probe();
    expect(watch.healthy()).toBe(true);
    expect(watch.metrics()).toEqual({ engine: 'vllm', running: 0, waiting: 0, kvUsage: 0 });
    expect(watch.load()).toBe(0);
    watch.failed('a call broke');
    expect(watch.healthy()).toBe(false);
    await watch.probe();
    expect(watch.healthy()).toBe(true);
    engine.setHealthy(false);
    await watch.probe();
    expect(watch.healthy()).toBe(false);
    engine.setHealthy(true);
    watch.stop();
  });

  it('is unhealthy while the engine cannot be reached', async () => {
    const watch = watchEngine({ url: 'http://127.0.0.1:1', clock: new ManualClock(0), probeMs: 200 });
    await watch.probe();
    expect(watch.healthy()).toBe(false);
    watch.stop();
  });
});

describe('engineRequest', () => {
  const template = { render: (messages: readonly { role: string; content: string }[], generation: boolean) => `${messages.map((m) => `[${m.role}]${m.content}`).join('')}${generation ? '[assistant]' : ''}` };

  it("turns a continued chat into a completion of the template's rendering followed by the assistant's text", () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hel' }], continue_final_message: true, add_generation_prompt: false, max_tokens: 3 };
    expect(engineRequest(true, body, template)).toEqual({ path: '/v1/completions', sent: { model: 'm', max_tokens: 3, prompt: '[user]hi[assistant]hel' } });
  });

  it('sends a chat as it is without a template, or when it does not continue', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect(engineRequest(true, body, template)).toEqual({ path: '/v1/chat/completions', sent: body });
    expect(engineRequest(true, { ...body, continue_final_message: true })).toEqual({ path: '/v1/chat/completions', sent: { ...body, continue_final_message: true } });
  });
});
