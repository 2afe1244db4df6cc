/**
 * `POST /v1/chat/completions` on a model served on real tokens (`serve --model DIR`), in this
 * process over loopback: a make-model model, one reference-engine agent holding every layer. The
 * chat is the completion of its conversation rendered by the model's chat template (or ChatML when
 * the orchestrator has none): its text equals `/v1/completions` on those token ids, whole and
 * streamed through the `openai` client; a drain waits for a chat under way, and hands back a
 * completion past its grace period (its stream ends with the `Draining` error, not its last token).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../../src/agent/agent.js';
import { ReferenceEngine } from '../../../src/agent/engines/reference/reference-engine.js';
import { makeModel } from '../../../src/model/make-model.js';
import { startOrchestrator, type RunningOrchestrator } from '../../../src/orchestrator/orchestrator.js';
import { readServedModel, type ServedModel } from '../../../src/orchestrator/served-model.js';
import { DEFAULT_CHAT_TEMPLATE, modelChatTemplate, type ChatTemplate } from '../../../src/wire/chat-prompt.js';
import { waitFor } from '../processes.js';

let dir: string;
let served: ServedModel;
const running: { orchestrator: RunningOrchestrator; agent: RunningAgent }[] = [];

beforeAll(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'hecate-chat-')), 'tiny');
  await makeModel(dir, { layers: 2, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, seed: 11 });
  served = await readServedModel(dir, 1);
});

afterAll(async () => {
  for (const { orchestrator, agent } of running) {
    await agent.stop();
    await orchestrator.close();
  }
  rmSync(join(dir, '..'), { recursive: true, force: true });
});

async function swarm(chatTemplate?: ChatTemplate): Promise<{ orchestrator: RunningOrchestrator; client: OpenAI }> {
  const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]), ...(chatTemplate !== undefined ? { chatTemplate } : {}) });
  const agent = await startAgent({ id: 'a1', memoryGb: (served.spec.layerGb ?? 1) * 2.02, score: 1, join: orchestrator.url, engine: new ReferenceEngine({ models: new Map([[served.text.id, dir]]) }) });
  running.push({ orchestrator, agent });
  await waitFor('a plan over the agent', () => (orchestrator.swarm() !== undefined ? true : undefined), 20_000, 20);
  return { orchestrator, client: new OpenAI({ baseURL: `${orchestrator.url}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

const messages = [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Hello there' }];

/** The greedy completion of `ids` through `/v1/completions`. */
async function completionOf(client: OpenAI, ids: number[], maxTokens: number): Promise<string> {
  const answer = await client.completions.create({ model: served.text.id, prompt: ids, max_tokens: maxTokens, temperature: 0 });
  return answer.choices[0]?.text ?? '';
}

describe('chat on real tokens', () => {
  it('is the completion of the conversation rendered by the model\'s chat template, whole and streamed; a drain waits for a chat under way', async () => {
    const template = await modelChatTemplate(dir);
    const { orchestrator, client } = await swarm(template);
    const ids = served.text.tokenizer.encode(template.render(messages, true));
    const expected = await completionOf(client, ids, 96);
    const whole = await client.chat.completions.create({ model: served.text.id, messages, max_tokens: 96, temperature: 0 });
    expect(whole.object).toBe('chat.completion');
    expect(whole.choices[0]?.message).toMatchObject({ role: 'assistant', content: expected });
    expect(whole.choices[0]?.finish_reason).toBe('length');
    expect(whole.usage).toMatchObject({ prompt_tokens: ids.length, completion_tokens: 96 });
    const stream = await client.chat.completions.create({ model: served.text.id, messages, max_tokens: 96, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let drained: ReturnType<RunningOrchestrator['drain']> | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage != null) usage = chunk.usage;
      // Midway: SIGTERM's drain waits for this chat (it passes the drain's gate) and refuses new ones.
      if (drained === undefined && text !== '') {
        drained = orchestrator.drain(10_000);
        const refused = await fetch(`${orchestrator.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: served.text.id, messages }) });
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).not.toBeNull();
        expect(await refused.json()).toMatchObject({ error: { code: 'Draining', type: 'server_error' } });
      }
    }
    expect(text).toBe(expected);
    expect(usage?.completion_tokens).toBe(96);
    expect(await drained).toEqual({ finished: 1, handedBack: 0 });
  });

  it('renders with ChatML when the orchestrator is given no template', async () => {
    const { client } = await swarm();
    const ids = served.text.tokenizer.encode(DEFAULT_CHAT_TEMPLATE.render(messages, true));
    const whole = await client.chat.completions.create({ model: served.text.id, messages, max_tokens: 8, temperature: 0 });
    expect(whole.choices[0]?.message.content).toBe(await completionOf(client, ids, 8));
    await expect(client.chat.completions.create({ model: served.text.id, messages, seed: -1 })).rejects.toMatchObject({ status: 400, param: 'seed' });
  });

  it('a drain hands back a streamed completion past its grace period, as the upstream routes are', async () => {
    const { orchestrator } = await swarm();
    const response = await fetch(`${orchestrator.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: served.text.id, prompt: 'Hello', max_tokens: 1500, temperature: 0, stream: true }) });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let sse = (await reader.read()).value ?? ''; // its first piece: it runs
    expect(await orchestrator.drain(100)).toEqual({ finished: 0, handedBack: 1 });
    for (let next = await reader.read(); next.done !== true; next = await reader.read()) sse += next.value;
    const events = sse.trim().split('\n\n');
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(events.at(-2)?.slice(6) ?? '{}')).toMatchObject({ error: { code: 'Draining' } });
    expect(events.length - 2).toBeLessThan(1500); // handed back midway: its pieces so far, not all of them
  });
});
