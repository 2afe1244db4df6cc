/**
 * Real tokens through real processes: `serve --model DIR` and three `agent --model DIR` on a
 * make-model model, two copies (a1 holding every layer; a2 → a3 splitting it, the route). A
 * greedy completion streamed while a3 is SIGKILLed mid-generation gives the token ids and the last
 * logits of the unbroken run: a1 took layers [3, 6), its KV cache rebuilt by replaying the
 * boundary activations the session kept at layer 3.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeModel } from '../../src/model/make-model.js';
import { endWeightBytes, layerBytes, readLlamaConfig } from '../../src/model/config.js';
import { startCli, stopAll, type Child } from './processes.js';

const LAYERS = 6;
const STEPS = 120;
let work: string;
let url: string;
const agents = new Map<string, Child>();

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hecate-kill-'));
  const dir = join(work, 'tiny');
  await makeModel(dir, { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 160, seed: 3 });
  const config = await readLlamaConfig(dir);
  const layerGb = layerBytes(config) / 1e9;
  const endGb = endWeightBytes(config) / 1e9;
  const token = join(work, 'swarm-token');
  const serve = await startCli('serve', ['serve', '--model', dir, '--pipelines', '2', '--port', '0', '--token-file', token], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  url = serve.match;
  // a1 holds every layer (one copy), a2 and a3 half each (the other, faster by score: the route).
  // Each --memory: its layers, the embeddings and head the plan keeps aside, and KV room (a2's and
  // a3's less than one more layer; a1's enough for a3's layers' caches too, after the kill).
  const memory: Record<string, number> = { a1: layerGb * (LAYERS + 2.5) + endGb, a2: layerGb * (LAYERS / 2 + 0.9) + endGb, a3: layerGb * (LAYERS / 2 + 0.9) + endGb };
  const score: Record<string, string> = { a1: '0.25', a2: '4', a3: '4' };
  for (const id of ['a1', 'a2', 'a3']) {
    const { child } = await startCli(id, ['agent', '--id', id, '--memory', String(memory[id]), '--score', score[id] as string, '--join', url, '--port', '0', '--token-file', token, '--state-file', join(work, `${id}.json`), '--model', dir], /listening on (http:\/\/[0-9.]+:\d+)/);
    agents.set(id, child);
  }
  for (let i = 0; i < 200; i++) {
    const status = (await (await fetch(`${url}/v1/status`)).json()) as { plan?: unknown };
    if (status.plan !== undefined && status.plan !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
}, 60_000);

afterAll(async () => {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
});

const REQUEST = { model: 'tiny', prompt: 'Once upon a time', max_tokens: STEPS, temperature: 0, hecate_return_logits: true };

/** Streams a completion; `onChunk` is told the count of chunks so far. Returns the final chunk. */
async function stream(onChunk: (n: number) => void): Promise<{ chunks: number; last: any; done: boolean }> {
  const response = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...REQUEST, stream: true }) });
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const decoder = new TextDecoder();
  let buffer = '';
  let chunks = 0;
  let last: any;
  let done = false;
  for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.replace(/^data: /, '');
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      last = JSON.parse(data);
      chunks++;
      onChunk(chunks);
    }
  }
  return { chunks, last, done };
}

describe('a completion across a SIGKILL', () => {
  it('gives the unbroken run\'s token ids and bit-identical last logits after the route\'s last agent is killed mid-generation', async () => {
    const unbroken = await (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(REQUEST) })).json() as any;
    expect(unbroken.choices[0].token_ids).toHaveLength(STEPS);
    expect(unbroken.hecate.resumes).toBe(0);
    const path = unbroken.hecate.path as { nodeId: string }[];
    expect(path.map((h) => h.nodeId)).toEqual(['a2', 'a3']);
    const victim = 'a3';
    const started = Date.now();
    let killedAt = 0;
    const run = await stream((n) => {
      if (n === 5 && killedAt === 0) {
        killedAt = n;
        agents.get(victim)?.process.kill('SIGKILL');
      }
    });
    expect(killedAt).toBe(5);
    expect(run.done).toBe(true);
    expect(run.last.error).toBeUndefined();
    expect(run.last.choices[0].finish_reason).toBe('length');
    expect(run.last.choices[0].token_ids).toEqual(unbroken.choices[0].token_ids);
    expect(run.last.hecate.last_logits_f32).toBe(unbroken.hecate.last_logits_f32);
    expect(run.last.hecate.resumes).toBeGreaterThanOrEqual(1);
    expect(run.last.hecate.replayed_inputs).toBeGreaterThan(0);
    // a1 took a3's layers, its KV cache rebuilt from the activations the session kept at layer 3.
    expect(run.last.hecate.path).toEqual([{ nodeId: 'a2', layers: [0, 3] }, { nodeId: 'a1', layers: [3, 6] }]);
    expect(run.last.hecate.replayed_bytes % (64 * 4)).toBe(0);
    // For the report: what the resume replayed and cost.
    console.log(`sigkill: victim ${victim}, path after ${JSON.stringify(run.last.hecate.path)}, replayed ${run.last.hecate.replayed_inputs} inputs / ${run.last.hecate.replayed_bytes} bytes, ${Date.now() - started} ms`);
  }, 60_000);
});
