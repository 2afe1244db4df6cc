/**
 * The OpenAI door with real processes (docs/openai.md): `hecate-node serve` and two
 * `hecate-node agent --upstream` processes, each in front of a scripted engine of this process.
 * The official `openai` client, whole and streamed; an abort mid-stream closes the engine's stream
 * within 1 s; an agent SIGKILLed mid-stream: the stream completes on the other copy with the
 * unkilled run's text.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedRun, startScriptedUpstream, type ScriptedUpstream } from '../../agent/upstream/scripted-upstream.js';
import { startCli, stopAll, waitFor, type Child } from '../processes.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-openai-'));
const tokenFile = join(dir, 'swarm-token');
const engines: ScriptedUpstream[] = [];
const agents: Child[] = [];
let client: OpenAI;

beforeAll(async () => {
  const serve = await startCli('serve', ['serve', '--port', '0', '--layers', '4', '--pipelines', '2', '--token-file', tokenFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  const url = serve.match;
  for (let i = 0; i < 2; i++) {
    const engine = await startScriptedUpstream({ tokenMs: 10 });
    engines.push(engine);
    agents.push((await startCli(`e${i}`, ['agent', '--id', `e${i}`, '--memory', '4', '--score', '1', '--join', url, '--port', '0', '--token-file', tokenFile, '--upstream', `${engine.url}/v1`], /listening on (http:\/\/\S+?),/, 30_000, { process: true })).child);
  }
  await waitFor('the swarm planned over the two upstream agents', async () => {
    const s = (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { state: string }[] };
    return s.status === 'healthy' && s.nodes.length === 2 && s.nodes.every((n) => n.state === 'alive') ? true : undefined;
  }, 20_000);
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 30_000);

afterAll(async () => {
  await stopAll();
  await Promise.all(engines.map((e) => e.close()));
});

const expected = (body: Record<string, unknown>) => scriptedRun('/v1/completions', body).tokens.join('');

describe('the OpenAI door with real processes', () => {
  it('answers whole and streamed, and an abort mid-stream closes the engine stream within 1 s', async () => {
    const whole = await client.completions.create({ model: 'base', prompt: 'processes', max_tokens: 6 });
    expect(whole.choices[0]?.text).toBe(expected({ prompt: 'processes', max_tokens: 6 }));
    const stream = await client.completions.create({ model: 'base', prompt: 'abort me', max_tokens: 300, stream: true });
    let chunks = 0;
    for await (const _ of stream) {
      if (++chunks === 3) {
        expect(engines.reduce((n, e) => n + e.openStreams(), 0)).toBe(1);
        stream.controller.abort();
        break;
      }
    }
    const aborted = Date.now();
    await waitFor('the engine stream closed', () => (engines.every((e) => e.openStreams() === 0) ? true : undefined), 1000, 5);
    expect(Date.now() - aborted).toBeLessThan(1000);
  });

  it('completes a stream whose agent is SIGKILLed midway on the other copy, with the unkilled text', async () => {
    const prompt = 'kill the agent';
    const stream = await client.completions.create({ model: 'base', prompt, max_tokens: 40, stream: true });
    let text = '';
    let chunks = 0;
    let killed = -1;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (++chunks === 5) {
        killed = engines.findIndex((e) => e.openStreams() === 1);
        agents[killed]?.process.kill('SIGKILL');
      }
    }
    expect(killed).toBeGreaterThanOrEqual(0);
    expect(await agents[killed]?.exited).toBe('SIGKILL');
    expect(text).toBe(expected({ prompt, max_tokens: 40 }));
  });
});
