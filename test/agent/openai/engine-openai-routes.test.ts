/**
 * The OpenAI API of `agent --model DIR --openai`, in process (engine-openai-routes.ts): pieces
 * aligned with their token ids, a continuation from the ids equal to the unbroken run, chat
 * through the model's template or the default one, refusals in OpenAI's shape.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerEngineOpenAIRoutes } from '../../../src/agent/openai/engine-openai-routes.js';
import { loadWholeModel, type WholeModel } from '../../../src/agent/openai/whole-model.js';
import { ReferenceEngine } from '../../../src/agent/engines/reference/reference-engine.js';
import { makeModel } from '../../../src/model/make-model.js';
import { createHttpApp } from '../../../src/net/http-app.js';
import { DEFAULT_CHAT_TEMPLATE } from '../../../src/wire/chat-prompt.js';

const work = mkdtempSync(join(tmpdir(), 'hecate-engine-openai-'));
let model: WholeModel;
let app: FastifyInstance;

async function serving(dir: string, apiKey?: string): Promise<{ model: WholeModel; app: FastifyInstance }> {
  const whole = await loadWholeModel(new ReferenceEngine({ models: new Map([['tiny', dir]]) }), 'tiny', dir);
  const server = createHttpApp();
  registerEngineOpenAIRoutes(server, { model: whole, clock: { now: () => 1_700_000_000_000 }, ...(apiKey !== undefined ? { apiKey } : {}) });
  await server.ready();
  return { model: whole, app: server };
}

beforeAll(async () => {
  const dir = join(work, 'tiny');
  await makeModel(dir, { layers: 2, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, seed: 5, maxPositions: 96 });
  ({ model, app } = await serving(dir));
});

afterAll(async () => {
  await app.close();
  rmSync(work, { recursive: true, force: true });
});

type Choice = { text?: string; delta?: { content?: string }; token_ids: number[]; prompt_token_ids?: number[]; finish_reason: string | null };

async function post(path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url: path, payload: body, headers });
}

function chunks(payload: string): { choices: Choice[]; usage?: { completion_tokens: number } }[] {
  const events = payload.split('\n\n').filter((e) => e !== '');
  expect(events.at(-1)).toBe('data: [DONE]');
  return events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
}

const decodeAfter = (prompt: readonly number[], ids: readonly number[]): string => {
  const context = model.tokenizer.decode(prompt.slice(-4));
  return model.tokenizer.decode([...prompt.slice(-4), ...ids]).slice(context.length);
};

describe('agent --openai: the OpenAI API on a model run whole', () => {
  it('streams pieces each carrying the ids of its text, and a continuation from the ids gives the unbroken text', async () => {
    const ask = { model: 'tiny', prompt: 'Once upon', max_tokens: 40, temperature: 0 };
    const whole = (await post('/v1/completions', ask)).json() as { choices: Choice[]; usage: { completion_tokens: number } };
    const choice = whole.choices[0] as Choice;
    expect(choice.token_ids).toHaveLength(40);
    expect(choice.prompt_token_ids).toEqual([model.tokenizer.bosTokenId, ...model.tokenizer.encode('Once upon')]);
    const streamed = chunks((await post('/v1/completions', { ...ask, stream: true, stream_options: { include_usage: true } })).payload);
    expect(streamed[0]?.choices[0]?.prompt_token_ids).toEqual(choice.prompt_token_ids);
    expect(streamed.slice(1).every((c) => c.choices[0]?.prompt_token_ids === undefined)).toBe(true);
    expect(streamed.at(-1)?.usage?.completion_tokens).toBe(40);
    const pieces = streamed.filter((c) => c.choices.length > 0).map((c) => c.choices[0] as Choice);
    expect(pieces.map((p) => p.text).join('')).toBe(choice.text);
    expect(pieces.flatMap((p) => p.token_ids)).toEqual(choice.token_ids);
    // Aligned: at every piece, the text so far is what the ids so far decode to after the prompt.
    let text = '';
    const ids: number[] = [];
    for (const p of pieces) {
      text += p.text;
      ids.push(...p.token_ids);
      expect(decodeAfter(choice.prompt_token_ids as number[], ids)).toBe(text);
    }
    // A continuation from a piece's ids: the rest of the unbroken run, exactly.
    const cut = Math.floor(pieces.length / 2);
    const head = pieces.slice(0, cut);
    const headIds = head.flatMap((p) => p.token_ids);
    const rest = (await post('/v1/completions', { ...ask, prompt: [...(choice.prompt_token_ids as number[]), ...headIds], max_tokens: 40 - headIds.length })).json() as { choices: Choice[] };
    expect(head.map((p) => p.text).join('') + rest.choices[0]?.text).toBe(choice.text);
    expect([...headIds, ...(rest.choices[0]?.token_ids ?? [])]).toEqual(choice.token_ids);
  });

  it('ends at a stop string, the text before it, finish_reason stop', async () => {
    const ask = { model: 'tiny', prompt: 'Once upon', max_tokens: 40, temperature: 0 };
    const whole = ((await post('/v1/completions', ask)).json() as { choices: Choice[] }).choices[0] as Choice;
    const stop = (whole.text as string).slice(10, 12);
    const cut = ((await post('/v1/completions', { ...ask, stop })).json() as { choices: Choice[] }).choices[0] as Choice;
    expect(cut.finish_reason).toBe('stop');
    expect(cut.text).toBe((whole.text as string).slice(0, (whole.text as string).indexOf(stop)));
  });

  it('renders a chat with the model\'s template, or the documented default when it has none', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const chat = chunks((await post('/v1/chat/completions', { model: 'tiny', messages, max_tokens: 5, temperature: 0, stream: true })).payload);
    expect(chat[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    expect(chat[0]?.choices[0]?.prompt_token_ids).toEqual(model.tokenizer.encode(model.template.render(messages, true)));
    expect(model.template.render(messages, true)).toBe('<s><|user|>\nhi\n<|assistant|>\n');
    const bare = join(work, 'bare');
    await makeModel(bare, { layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, seed: 5 });
    const config = JSON.parse(readFileSync(join(bare, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    delete config['chat_template'];
    writeFileSync(join(bare, 'tokenizer_config.json'), JSON.stringify(config));
    const other = await serving(bare);
    expect(other.model.template).toBe(DEFAULT_CHAT_TEMPLATE);
    const answer = (await other.app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'tiny', messages, max_tokens: 3, temperature: 0 } })).json() as { object: string; choices: Choice[] };
    expect(answer.object).toBe('chat.completion');
    expect(answer.choices[0]?.prompt_token_ids).toEqual(other.model.tokenizer.encode('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n'));
    await other.app.close();
  });

  it('refuses in OpenAI\'s shape: an unknown model 404, past the context 400, a missing key 401', async () => {
    const unknown = await post('/v1/completions', { model: 'other', prompt: 'x' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: 'model_not_found', param: 'model', type: 'invalid_request_error' } });
    const long = await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 95 });
    expect(long.statusCode).toBe(400);
    expect(long.json()).toMatchObject({ error: { param: 'max_tokens' } });
    expect((await post('/v1/completions', { model: 'tiny', prompt: 'x', logprobs: 2 })).json()).toMatchObject({ error: { param: 'logprobs' } });
    const keyed = await serving(join(work, 'tiny'), 'sk-engine');
    expect((await keyed.app.inject({ method: 'GET', url: '/v1/models' })).statusCode).toBe(401);
    const listed = (await keyed.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer sk-engine' } })).json() as { data: { id: string }[] };
    expect(listed.data.map((m) => m.id)).toEqual(['tiny']);
    await keyed.app.close();
  });
});
