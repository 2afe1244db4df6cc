/**
 * SIGTERM's drain and the OpenAI door (docs/serve.md, "Draining"), in this process over loopback:
 * an orchestrator and one upstream agent in front of a scripted engine. Every OpenAI request passes
 * the drain's gate: a drain refuses new ones (503 `Draining`, `Retry-After`, OpenAI's shape), lets
 * a stream that ends within the grace period finish whole, and hands back one that does not: its
 * stream ends with the `Draining` error event and the engine's stream is closed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUpstreamAgent, type RunningUpstreamAgent } from '../../../src/agent/upstream/upstream-agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../../src/orchestrator/orchestrator.js';
import { scriptedRun, startScriptedUpstream, type ScriptedUpstream } from '../../agent/upstream/scripted-upstream.js';
import { waitFor } from '../processes.js';

let orchestrator: RunningOrchestrator;
let engine: ScriptedUpstream;
let agent: RunningUpstreamAgent;

beforeAll(async () => {
  orchestrator = await startOrchestrator({ models: [{ id: 'tiny', kind: 'base', layers: 4, pipelines: 1 }] });
  engine = await startScriptedUpstream({ tokenMs: 10 });
  agent = await startUpstreamAgent({ id: 'u0', memoryGb: 4, score: 1, join: orchestrator.url, upstream: `${engine.url}/v1`, heartbeatMs: 200, probeMs: 200 });
  await agent.joined;
  await waitFor('the swarm planned over the upstream agent', () => (orchestrator.swarm() !== undefined ? true : undefined), 10_000, 20);
});

afterAll(async () => {
  await agent.stop();
  await orchestrator.close();
  await engine.close();
});

/** Opens a stream; resolves once its first event arrived, with the promise of its whole text. */
async function open(prompt: string, maxTokens: number): Promise<{ whole: Promise<string> }> {
  const response = await fetch(`${orchestrator.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt, max_tokens: maxTokens, stream: true }) });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let text = (await reader.read()).value ?? '';
  const whole = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return text;
      text += value;
    }
  })();
  return { whole };
}

const pieces = (sse: string): string => sse.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => (JSON.parse(e.slice(6)) as { choices?: { text?: string }[] }).choices?.[0]?.text ?? '').join('');

describe('the OpenAI door under a drain', () => {
  it('refuses new requests, finishes a stream within the grace period and hands back one past it', async () => {
    const long = await open('long one', 400); // ~4 s
    const short = await open('short one', 5); // ~50 ms of tokens left
    expect(engine.openStreams()).toBeGreaterThanOrEqual(1);
    const drained = orchestrator.drain(1500);
    const refused = await fetch(`${orchestrator.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }) });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toMatchObject({ error: { code: 'Draining', type: 'server_error' } });
    expect(await drained).toEqual({ finished: 1, handedBack: 1 });
    const whole = await short.whole;
    expect(whole.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(pieces(whole)).toBe(scriptedRun('/v1/completions', { prompt: 'short one', max_tokens: 5 }).tokens.join(''));
    const cut = await long.whole;
    expect(cut).not.toContain('[DONE]');
    expect(JSON.parse(cut.trim().split('\n\n').at(-1)?.slice(6) ?? '{}')).toMatchObject({ error: { code: 'Draining' } });
    await waitFor('the engine stream closed within 1 s', () => (engine.openStreams() === 0 ? true : undefined), 1000, 5);
  });
});
