/**
 * Helpers of the real-token process tests: a make-model model, `serve --model` and `agent --model`
 * processes of the built CLI on it (processes.ts), a streamed completion read chunk by chunk, and
 * the unbroken single-agent run to compare with: the reference engine holding every layer, in this
 * process, greedy from the same token ids.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ReferenceEngine } from '../../src/agent/engines/reference/reference-engine.js';
import { endWeightBytes, layerBytes, readLlamaConfig } from '../../src/model/config.js';
import { makeModel } from '../../src/model/make-model.js';
import { argmax } from '../../src/model/sampler.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { tokenTensor, type Tensor } from '../../src/wire/tensor.js';
import { startCli, waitFor, type Child } from './processes.js';

/** A tiny model's shape: 6 layers of 64 hidden, enough for a split in two and real arithmetic. */
export const TINY = { layers: 6, hidden: 64, heads: 4, kvHeads: 2, intermediate: 160 } as const;

/** Writes the tiny model in `work`/tiny; its directory, one layer's GB and what end stages hold beside their layers (GB). */
export async function tinyModel(work: string, seed: number): Promise<{ dir: string; layerGb: number; endGb: number }> {
  const dir = join(work, 'tiny');
  await makeModel(dir, { ...TINY, seed });
  const config = await readLlamaConfig(dir);
  return { dir, layerGb: layerBytes(config) / 1e9, endGb: endWeightBytes(config) / 1e9 };
}

/**
 * Starts `serve --model dir` with `extra` flags, then agents (id → the layers it holds, its score,
 * and `room`, its KV memory in layers: 0.9 by default, less than one more layer for the plan), and
 * waits for the plan. Serve runs in this process; the agents too, unless `agentProcesses` (a test
 * that kills one). Each `--memory` is its layers, its room, and the embeddings and head the plan
 * keeps aside on every agent (docs/completions.md, "KV memory").
 */
export async function startModelSwarm(work: string, model: { readonly dir: string; readonly layerGb: number; readonly endGb: number }, setup: { readonly pipelines: number; readonly agents: Readonly<Record<string, { layers: number; score: number; room?: number }>>; readonly extra?: readonly string[]; readonly agentProcesses?: boolean }): Promise<{ url: string; agents: Map<string, Child>; operatorToken: string }> {
  const { dir, layerGb, endGb } = model;
  const token = join(work, 'swarm-token');
  const operatorFile = join(work, 'operator-token');
  const serve = await startCli('serve', ['serve', '--model', dir, '--pipelines', String(setup.pipelines), '--port', '0', '--token-file', token, '--operator-token-file', operatorFile, ...(setup.extra ?? [])], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  const url = serve.match;
  const agents = new Map<string, Child>();
  for (const [id, a] of Object.entries(setup.agents)) {
    const { child } = await startCli(id, ['agent', '--id', id, '--memory', String(layerGb * (a.layers + (a.room ?? 0.9)) + endGb), '--score', String(a.score), '--join', url, '--port', '0', '--token-file', token, '--state-file', join(work, `${id}.json`), '--model', dir], /listening on (http:\/\/[0-9.]+:\d+)/, 30_000, { process: setup.agentProcesses === true });
    agents.set(id, child);
  }
  await waitFor('the plan', async () => {
    const status = (await (await fetch(`${url}/v1/status`)).json()) as { plan?: unknown };
    return status.plan !== undefined && status.plan !== null ? true : undefined;
  }, 20_000, 50);
  return { url, agents, operatorToken: readFileSync(operatorFile, 'utf8').trim() };
}

/**
 * A streamed completion, read to its end or until `stopAfter` chunks (then the connection is
 * dropped); `onChunk` is told the count of chunks so far, awaited before the next is read.
 */
export async function streamCompletion(url: string, body: object, options: { readonly headers?: Record<string, string>; readonly stopAfter?: number; readonly onChunk?: (n: number) => unknown } = {}): Promise<{ chunks: number; text: string; last: any; done: boolean }> {
  const abort = new AbortController();
  const response = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...options.headers }, body: JSON.stringify({ ...body, stream: true }), signal: abort.signal });
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) throw new Error(`POST /v1/completions answered ${response.status} ${response.headers.get('content-type')}, not a stream: ${await response.text()}`);
  const decoder = new TextDecoder();
  let buffer = '';
  let chunks = 0;
  let text = '';
  let last: any;
  let done = false;
  try {
    for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(bytes, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer.slice(0, end).replace(/^data: /, '');
        buffer = buffer.slice(end + 2);
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        last = JSON.parse(data);
        text += last.choices?.[0]?.text ?? '';
        chunks++;
        await options.onChunk?.(chunks);
        if (chunks === options.stopAfter) {
          abort.abort();
          return { chunks, text, last, done };
        }
      }
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  }
  return { chunks, text, last, done };
}

/**
 * The unbroken single-agent run: every layer on one reference engine, in this process, greedy
 * from `promptIds` for `maxTokens` (or to the end-of-sequence token). Its ids and its last
 * logits as `hecate_return_logits` answers them (base64 of the f32 bytes).
 */
export async function singleAgentRun(dir: string, promptIds: readonly number[], maxTokens: number): Promise<{ ids: number[]; lastLogits: string }> {
  const modelId = 'tiny';
  const engine = new ReferenceEngine({ models: new Map([[modelId, dir]]) });
  const span = { modelId, layerStart: 0, layerEnd: TINY.layers, layers: TINY.layers };
  await engine.load(span);
  const eos = (await loadTokenizer(dir)).eosTokenId;
  const ids: number[] = [];
  let input = tokenTensor(promptIds);
  let logits = new Float32Array(0);
  for (let step = 0; step < maxTokens; step++) {
    const out = await engine.step({ sessionId: 'unbroken', span, step, input, signal: new AbortController().signal });
    const tensor = (out as { output?: Tensor }).output ?? (out as Tensor);
    logits = new Float32Array(new Uint8Array(tensor.data).buffer);
    const id = argmax(logits);
    ids.push(id);
    if (id === eos) break;
    input = tokenTensor([id]);
  }
  return { ids, lastLogits: Buffer.from(logits.buffer).toString('base64') };
}
