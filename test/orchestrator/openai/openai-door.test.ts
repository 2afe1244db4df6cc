/**
 * The OpenAI door (docs/openai.md), in this process over loopback: an orchestrator and three
 * upstream agents, each in front of a scripted engine (one whole copy each). The official `openai`
 * client, streaming and not, chat and completions; an abort mid-stream closes the engine's stream
 * within 1 s; `curl -N`; a refusal before the first byte retried on another copy; an engine dying
 * mid-stream continued on another with the unfailed run's exact text.
 */
import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUpstreamAgent, type RunningUpstreamAgent } from '../../../src/agent/upstream/upstream-agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../../src/orchestrator/orchestrator.js';
import { scriptedRun, startScriptedUpstream, type ScriptedUpstream } from '../../agent/upstream/scripted-upstream.js';
import { waitFor } from '../processes.js';

const MODEL = 'tiny';
let orchestrator: RunningOrchestrator;
const engines: ScriptedUpstream[] = [];
const agents: RunningUpstreamAgent[] = [];
let client: OpenAI;

beforeAll(async () => {
  orchestrator = await startOrchestrator({ models: [{ id: MODEL, kind: 'base', layers: 4, pipelines: 3 }] });
  for (let i = 0; i < 3; i++) {
    const engine = await startScriptedUpstream({ model: 'scripted-tiny', tokenMs: 2 });
    engines.push(engine);
    agents.push(await startUpstreamAgent({ id: `u${i}`, memoryGb: 4, score: 1, join: orchestrator.url, upstream: `${engine.url}/v1`, heartbeatMs: 200, probeMs: 200 }));
  }
  await Promise.all(agents.map((a) => a.joined));
  await waitFor('the swarm planned over the three upstream agents', () => (orchestrator.swarm()?.state().plan.pipelines.length === 3 ? true : undefined), 10_000, 20);
  client = new OpenAI({ baseURL: `${orchestrator.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await orchestrator.close();
  await Promise.all(engines.map((e) => e.close()));
});

const expected = (path: string, body: Record<string, unknown>) => scriptedRun(path, body).tokens.join('');

describe('the OpenAI door with the openai client', () => {
  it('lists the swarm\'s models', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
  });

  it('answers a completion whole and streamed, with usage', async () => {
    const whole = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 12 });
    expect(whole.choices[0]?.text).toBe(expected('/v1/completions', { prompt: 'Once upon a time', max_tokens: 12 }));
    expect(whole.usage?.completion_tokens).toBe(12);
    const stream = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 12, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(whole.choices[0]?.text);
    expect(usage).toMatchObject({ completion_tokens: 12, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('answers a chat whole and streamed', async () => {
    const messages = [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Name the swarm.' }];
    const want = expected('/v1/chat/completions', { messages, max_tokens: 10 });
    const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 10 });
    expect(whole.choices[0]?.message.content).toBe(want);
    const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 10, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(want);
  });

  it('closes the engine\'s stream within 1 s of an abort mid-stream', async () => {
    const stream = await client.completions.create({ model: MODEL, prompt: 'a long story', max_tokens: 400, stream: true });
    let chunks = 0;
    let openAtAbort = 0;
    for await (const _ of stream) {
      if (++chunks === 5) {
        openAtAbort = engines.reduce((n, e) => n + e.openStreams(), 0);
        stream.controller.abort();
        break;
      }
    }
    expect(openAtAbort).toBe(1);
    const aborted = Date.now();
    await waitFor('every engine stream closed', () => (engines.every((e) => e.openStreams() === 0) ? true : undefined), 1000, 5);
    expect(Date.now() - aborted).toBeLessThan(1000);
  });

  it('refuses n other than 1 (400) and an unknown model (404) in OpenAI\'s error shape', async () => {
    await expect(client.completions.create({ model: MODEL, prompt: 'x', n: 2 })).rejects.toMatchObject({ status: 400, param: 'n', type: 'invalid_request_error' });
    await expect(client.completions.create({ model: 'nope', prompt: 'x' })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    await expect(client.completions.create({ model: MODEL, prompt: 'x', logprobs: 2 })).rejects.toMatchObject({ status: 400, param: 'logprobs' });
  });
});

describe('the OpenAI door with curl -N', () => {
  it('streams one SSE answer ending in data: [DONE]', async () => {
    const body = JSON.stringify({ model: MODEL, prompt: 'curl me', max_tokens: 6, stream: true });
    const out = await new Promise<string>((resolve, reject) => {
      const curl = spawn('curl', ['-N', '-s', '-X', 'POST', `${orchestrator.url}/v1/completions`, '-H', 'content-type: application/json', '-d', body]);
      let text = '';
      curl.stdout.on('data', (c: Buffer) => (text += c.toString('utf8')));
      curl.on('error', reject);
      curl.on('close', () => resolve(text));
    });
    const events = out.split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toBe('data: [DONE]');
    const text = events.slice(0, -1).map((e) => (JSON.parse(e.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? '').join('');
    expect(text).toBe(expected('/v1/completions', { prompt: 'curl me', max_tokens: 6 }));
  });
});

describe('failover of the OpenAI door', () => {
  it('retries a refusal before the first byte on another copy, never the same engine twice', async () => {
    let refused = 0;
    // The swarm spreads fresh requests over the copies in turn: the good engine goes from last to first, against that order.
    for (let good = engines.length - 1; good >= 0; good--) {
      const prompt = `retry ${good}`;
      const before = engines.map((e) => e.bodies.length);
      engines.forEach((e, i) => e.refuse(i === good ? 0 : 100, 503));
      try {
        const answer = await client.completions.create({ model: MODEL, prompt, max_tokens: 5 });
        expect(answer.choices[0]?.text).toBe(expected('/v1/completions', { prompt, max_tokens: 5 }));
      } finally {
        engines.forEach((e) => e.refuse(0, 503));
      }
      const calls = engines.map((e, i) => e.bodies.length - (before[i] as number));
      expect(calls.every((n) => n <= 1)).toBe(true);
      expect(calls[good]).toBe(1);
      refused += calls.reduce((a, b) => a + b, 0) - 1;
    }
    expect(refused).toBeGreaterThan(0);
  });

  it('tries an engine at capacity (429) on another copy and charges its agent nothing, where a 503 refusal counts a failure', async () => {
    const swarm = orchestrator.swarm();
    let refused = 0;
    for (const [status, charged] of [[429, 0], [503, 1]] as const) {
      const failures = () => agents.map((a) => swarm?.node(a.id)?.failures ?? 0);
      const before = failures();
      const calls = engines.map((e) => e.bodies.length);
      engines.forEach((e, i) => e.refuse(i === 2 ? 0 : 100, status));
      try {
        // Until a refusing engine was tried first (the swarm spreads fresh requests over the copies).
        for (let n = 0; n < 6 && [0, 1].every((i) => engines[i]?.bodies.length === calls[i]); n++) {
          const prompt = `capacity ${status} ${n}`;
          const answer = await client.completions.create({ model: MODEL, prompt, max_tokens: 4 });
          expect(answer.choices[0]?.text).toBe(expected('/v1/completions', { prompt, max_tokens: 4 }));
        }
      } finally {
        engines.forEach((e) => e.refuse(0, 503));
      }
      const refusers = [0, 1].filter((i) => (engines[i]?.bodies.length as number) > (calls[i] as number));
      refused += refusers.length;
      const after = failures();
      for (const i of refusers) expect(after[i], `${status}: agent u${i}`).toBe(Math.min((before[i] as number) + charged, 5));
    }
    expect(refused).toBeGreaterThan(0);
  });

  it('answers 503 once every engine refused, each tried once', async () => {
    const before = engines.map((e) => e.bodies.length);
    engines.forEach((e) => e.refuse(100, 503));
    try {
      await expect(client.completions.create({ model: MODEL, prompt: 'all refuse', max_tokens: 5 })).rejects.toMatchObject({ status: 503 });
    } finally {
      engines.forEach((e) => e.refuse(0, 503));
    }
    expect(engines.map((e, i) => e.bodies.length - (before[i] as number))).toEqual([1, 1, 1]);
  });

  it('continues a stream whose engine dies midway on another copy: the unfailed run\'s exact text, usage and max_tokens held', async () => {
    const prompt = 'die midway please';
    engines.forEach((e) => e.dieAfter(12)); // every engine dies after 12 tokens: three segments of 12, 12 and 6
    const before = engines.map((e) => e.bodies.length);
    const stream = await client.completions.create({ model: MODEL, prompt, max_tokens: 30, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    try {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
    } finally {
      engines.forEach((e) => e.dieAfter(undefined));
    }
    expect(text).toBe(expected('/v1/completions', { prompt, max_tokens: 30 }));
    expect(usage?.completion_tokens).toBe(30);
    const sent = engines.flatMap((e, i) => e.bodies.slice(before[i]) as { prompt: string; max_tokens: number }[]).sort((a, b) => b.max_tokens - a.max_tokens);
    expect(sent.map((b) => b.max_tokens)).toEqual([30, 18, 6]);
    expect(sent.map((b) => b.prompt.length - prompt.length)).toEqual([0, expected('/v1/completions', { prompt, max_tokens: 12 }).length, expected('/v1/completions', { prompt, max_tokens: 24 }).length]);
  });

  it('continues a chat whose engine dies midway as the assistant\'s unfinished message, with the unfailed run\'s text', async () => {
    const messages = [{ role: 'user' as const, content: 'Tell me about the swarm, at length.' }];
    engines.forEach((e) => e.dieAfter(5));
    let text = '';
    try {
      const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, stream: true });
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    } finally {
      engines.forEach((e) => e.dieAfter(undefined));
    }
    expect(text).toBe(expected('/v1/chat/completions', { messages, max_tokens: 12 }));
  });
});
