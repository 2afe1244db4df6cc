/**
 * Real tokens through a split model, in this process on loopback (the process boundary is the
 * SIGKILL test's point, not this one's): a make-model model served by the orchestrator (config
 * and tokenizer only) and run by reference-engine agents over the binary wire. The token ids of a
 * greedy completion over 2, 3 and 4 agents equal those of one agent holding every layer, and the
 * last logits are bit-identical; OpenAI's shape, streaming and the field errors are checked too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { ReferenceEngine } from '../../src/agent/engines/reference/reference-engine.js';
import { makeModel } from '../../src/model/make-model.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { readServedModel, type ServedModel } from '../../src/orchestrator/served-model.js';
import { waitFor } from './processes.js';

const LAYERS = 12;
let dir: string;
let served: ServedModel;

beforeAll(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'hecate-cmpl-')), 'tiny');
  await makeModel(dir, { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 160, seed: 7 });
  served = await readServedModel(dir, 1);
});

afterAll(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

/** An orchestrator and `n` agents each able to hold `LAYERS / n` layers: the plan must split the model n ways. */
async function swarmOf(n: number): Promise<{ orchestrator: RunningOrchestrator; agents: RunningAgent[] }> {
  const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]), stageTimeoutMs: 20_000 });
  const memoryGb = (served.spec.layerGb ?? 1) * (LAYERS / n) * 1.01;
  const agents: RunningAgent[] = [];
  for (let i = 0; i < n; i++) {
    agents.push(await startAgent({ id: `a${n}-${i}`, memoryGb, score: 1, join: orchestrator.url, engine: new ReferenceEngine({ models: new Map([[served.text.id, dir]]) }) }));
  }
  await waitFor(`a plan over ${n} agent(s)`, () => (orchestrator.swarm() !== undefined ? true : undefined), 20_000, 20);
  return { orchestrator, agents };
}

async function complete(url: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

/** On the 2-agent swarm: the stream gives the same text and ids, a stop string cuts, a seed repeats its draw, a bad model or id is refused. */
async function streamAndSample(url: string, greedy: { text: string; token_ids: number[] }): Promise<void> {
  const response = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...GREEDY, model: served.text.id, stream: true }) });
  const events = (await response.text()).split('\n\n').filter((e) => e !== '');
  expect(events[events.length - 1]).toBe('data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
  expect(chunks.map((c) => c.choices[0].text).join('')).toBe(greedy.text);
  expect(chunks[chunks.length - 1].choices[0]).toMatchObject({ finish_reason: 'length', token_ids: greedy.token_ids });
  const stop = [...greedy.text].slice(3, 5).join('');
  const stopped = await complete(url, { ...GREEDY, model: served.text.id, stop });
  expect(stopped.body.choices[0].finish_reason).toBe('stop');
  expect(stopped.body.choices[0].text).toBe(greedy.text.slice(0, greedy.text.indexOf(stop)));
  const sampled = { model: served.text.id, prompt: [1, 40, 41], max_tokens: 12, temperature: 0.9, top_p: 0.95, seed: 5 };
  const a = await complete(url, sampled);
  const b = await complete(url, sampled);
  const c = await complete(url, { ...sampled, seed: 6 });
  expect(a.body.choices[0].token_ids).toEqual(b.body.choices[0].token_ids);
  expect(c.body.choices[0].token_ids).not.toEqual(a.body.choices[0].token_ids);
  // Errors in OpenAI's shape (the OpenAI routes answer them): an unknown model, an id outside the vocabulary.
  const bad = await complete(url, { model: 'nope', prompt: 'x' });
  expect(bad.status).toBe(404);
  expect(bad.body.error).toMatchObject({ param: 'model', code: 'model_not_found' });
  const outside = await complete(url, { model: served.text.id, prompt: [1, 5000] });
  expect(outside.status).toBe(400);
  expect(outside.body.error).toMatchObject({ param: 'prompt/1', code: 'InvalidRequest', type: 'invalid_request_error' });
}

const GREEDY = { prompt: 'The swarm', max_tokens: 24, temperature: 0, hecate_return_logits: true };

describe('POST /v1/completions over a split model', () => {
  const results = new Map<number, { ids: number[]; logits: string; text: string; stages: number }>();

  it.each([1, 2, 3, 4])('a greedy completion over %i agent(s)', async (n) => {
    const { orchestrator, agents } = await swarmOf(n);
    try {
      const r = await complete(orchestrator.url, { ...GREEDY, model: served.text.id });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.object).toBe('text_completion');
      const choice = r.body.choices[0];
      expect(choice.token_ids).toHaveLength(24);
      expect(choice.finish_reason).toBe('length');
      expect(r.body.usage).toEqual({ prompt_tokens: 10, completion_tokens: 24, total_tokens: 34 });
      expect(r.body.hecate.path).toHaveLength(n);
      results.set(n, { ids: choice.token_ids, logits: r.body.hecate.last_logits_f32, text: choice.text, stages: r.body.hecate.path.length });
      if (n === 2) await streamAndSample(orchestrator.url, choice);
    } finally {
      await Promise.all(agents.map((a) => a.stop()));
      await orchestrator.close();
    }
  });

  it('gives the one-agent token ids and bit-identical last logits over 2, 3 and 4 agents', () => {
    const one = results.get(1);
    expect(one).toBeDefined();
    expect(Buffer.from(one?.logits ?? '', 'base64').byteLength).toBe(served.text.vocab * 4);
    for (const n of [2, 3, 4]) {
      expect(results.get(n)?.ids).toEqual(one?.ids);
      expect(results.get(n)?.logits).toBe(one?.logits);
      expect(results.get(n)?.text).toBe(one?.text);
    }
  });
});
