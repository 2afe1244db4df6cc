/**
 * The OpenAI API of `hecate-node agent --model DIR --openai` (docs/openai.md, "The reference
 * engine as an upstream"): `GET /health`, `GET /v1/models`, `POST /v1/completions` and
 * `POST /v1/chat/completions` on the model it runs whole, so another swarm's
 * `agent --upstream` can front it as it fronts vLLM. The request is checked as `serve` checks it
 * (src/wire/openai-request.ts); a chat goes through the model's chat template. As vLLM's
 * `return_token_ids` does, every choice carries `token_ids` (a stream's chunks: the ids of their
 * text) and the first `prompt_token_ids`, so a stream cut midway can be continued from the ids.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { openAIError, openAIErrorHandler } from '../../net/openai-error.js';
import type { TimeSource } from '../../runtime/types.js';
import { checkCompletionRequest, type CompletionJob } from '../../wire/openai-request.js';
import { sameSecret } from '../../wire/request-signing.js';
import { ServeError } from '../../wire/serve-error.js';
import { generateWhole, type GeneratedPiece, type GenerationEnd } from './whole-generation.js';
import type { WholeModel } from './whole-model.js';

/** What the routes serve. */
export interface EngineOpenAIOptions {
  readonly model: WholeModel;
  /** When set, every request needs `authorization: Bearer` with it (`--api-key-file`). */
  readonly apiKey?: string;
  /** Stamps each answer's `created`. */
  readonly clock: TimeSource;
}

/** Registers the routes in their own scope (errors in OpenAI's shape). */
export function registerEngineOpenAIRoutes(app: FastifyInstance, options: EngineOpenAIOptions): void {
  const { model } = options;
  const authenticate = (request: FastifyRequest): void => {
    if (options.apiKey === undefined) return;
    const bearer = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (bearer === undefined || !sameSecret(bearer, options.apiKey)) throw new ServeError('Unauthenticated', 401, 'header authorization: needs "Bearer <API key>" (the key of --api-key-file)', { field: 'authorization' });
  };
  /** Generations running now, and every one started (`GET /health`). */
  let running = 0;
  let requests = 0;
  void app.register(async (scope) => {
    scope.setErrorHandler(openAIErrorHandler(engineError));
    scope.get('/health', async () => ({ status: 'ok', model: model.id, running, requests }));
    scope.get('/v1/models', async (request) => {
      authenticate(request);
      return { object: 'list', data: [{ id: model.id, object: 'model', created: 0, owned_by: 'hecate-swarm', max_model_len: model.contextTokens }] };
    });
    scope.post('/v1/completions', (request, reply) => complete(request, reply, false));
    scope.post('/v1/chat/completions', (request, reply) => complete(request, reply, true));
  });

  const complete = async (request: FastifyRequest, reply: FastifyReply, chat: boolean): Promise<unknown> => {
    authenticate(request);
    const job = checkCompletionRequest(request.body, chat);
    if (job.model !== model.id) throw new ServeError('NotFound', 404, `model "${job.model.slice(0, 200)}" is not served here (GET /v1/models: ${model.id})`, { field: 'model' });
    const promptIds = promptIdsOf(model, job);
    if (promptIds.length + job.maxTokens > model.contextTokens) throw new ServeError('InvalidRequest', 400, `max_tokens: the prompt's ${promptIds.length} tokens and max_tokens ${job.maxTokens} pass the model's context of ${model.contextTokens} tokens`, { field: 'max_tokens' });
    const hangUp = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) hangUp.abort(new ServeError('Internal', 499, 'the client went away before the answer'));
    });
    const temperature = typeof job.sampling['temperature'] === 'number' ? job.sampling['temperature'] : 1;
    const topP = typeof job.sampling['top_p'] === 'number' && job.sampling['top_p'] > 0 ? job.sampling['top_p'] : job.sampling['top_p'] === 0 ? Number.MIN_VALUE : 1;
    const seed = typeof job.sampling['seed'] === 'number' ? job.sampling['seed'] : 0;
    const ask = { promptIds, maxTokens: job.maxTokens, sampling: { temperature, topP, seed }, stop: job.stop, signal: hangUp.signal };
    const answer = new Answer(reply, job, model.id, promptIds, Math.floor(options.clock.now() / 1000));
    running++;
    requests++;
    try {
      if (!job.stream) {
        const pieces: string[] = [];
        const end = await generateWhole(model, ask, (piece) => pieces.push(piece.text));
        return answer.whole(pieces.join('') + end.last.text, end);
      }
      answer.open();
      try {
        answer.end(await generateWhole(model, ask, (piece) => answer.piece(piece)));
      } catch (error) {
        answer.fail(error);
      }
      return reply;
    } finally {
      running--;
    }
  };
}

/** The prompt's token ids: a completion's ids as given, its text after the bos token; a chat through the template. */
function promptIdsOf(model: WholeModel, job: CompletionJob): number[] {
  const { tokenizer } = model;
  if (job.chat) return tokenizer.encode(model.template.render(job.messages ?? [], true));
  const prompt = job.prompt ?? '';
  if (typeof prompt !== 'string') {
    const bad = prompt.findIndex((t) => t >= model.vocab);
    if (bad >= 0) throw new ServeError('InvalidRequest', 400, `prompt/${bad}: token id ${prompt[bad]} is outside the vocabulary of "${model.id}" (${model.vocab} tokens)`, { field: `prompt/${bad}` });
    return [...prompt];
  }
  const ids = [...(tokenizer.bosTokenId !== undefined ? [tokenizer.bosTokenId] : []), ...tokenizer.encode(prompt)];
  if (ids.length === 0) throw new ServeError('InvalidRequest', 400, `prompt: empty, and "${model.id}" has no bos token to start from`, { field: 'prompt' });
  return ids;
}

/** The reference engine's errors as the statuses to answer (a full KV cache is a 503 to retry). */
function engineError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = (error as Error).message;
  if (code === 'KvMemoryExhausted') return new ServeError('Full', 503, message, { retryAfterMs: 1000 });
  if (code === 'ContextExceeded' || code === 'InvalidInput') return new ServeError('InvalidRequest', 400, message, { field: 'prompt' });
  return error;
}

/** One answer, whole or streamed as OpenAI's chunks ending `data: [DONE]`. */
class Answer {
  private readonly id: string;
  private first = true;

  constructor(
    private readonly reply: FastifyReply,
    private readonly job: CompletionJob,
    private readonly model: string,
    private readonly promptIds: readonly number[],
    private readonly created: number,
  ) {
    this.id = `${job.chat ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
  }

  whole(text: string, end: GenerationEnd): unknown {
    const { job } = this;
    const ids = { token_ids: end.ids, prompt_token_ids: this.promptIds };
    const choice = job.chat ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: end.finish, ...ids } : { index: 0, text, logprobs: null, finish_reason: end.finish, ...ids };
    return { id: this.id, object: job.chat ? 'chat.completion' : 'text_completion', created: this.created, model: this.model, choices: [choice], usage: this.usage(end) };
  }

  open(): void {
    this.reply.hijack();
    this.reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    if (this.job.chat) this.send({ delta: { role: 'assistant', content: '' }, finish_reason: null, token_ids: [] });
  }

  piece(piece: GeneratedPiece): void {
    this.send({ ...this.text(piece.text), finish_reason: null, token_ids: piece.ids });
  }

  end(end: GenerationEnd): void {
    this.send({ ...this.text(end.last.text), finish_reason: end.finish, token_ids: end.last.ids });
    if (this.job.includeUsage) this.chunk([], this.usage(end));
    this.reply.raw.end('data: [DONE]\n\n');
  }

  /** Midway: one error event and no `[DONE]`, so a reader knows the answer was cut. */
  fail(error: unknown): void {
    if (!this.reply.raw.destroyed) this.reply.raw.end(`data: ${JSON.stringify(openAIError(error, engineError).body)}\n\n`);
  }

  private text(text: string): Record<string, unknown> {
    return this.job.chat ? { delta: { content: text } } : { text };
  }

  private usage(end: GenerationEnd): Record<string, unknown> {
    return { prompt_tokens: this.promptIds.length, completion_tokens: end.ids.length, total_tokens: this.promptIds.length + end.ids.length, prompt_tokens_details: { cached_tokens: 0 } };
  }

  private send(choice: Record<string, unknown>): void {
    const ids = this.first ? { prompt_token_ids: this.promptIds } : {};
    this.first = false;
    this.chunk([{ index: 0, logprobs: null, ...choice, ...ids }]);
  }

  private chunk(choices: unknown[], usage?: unknown): void {
    if (this.reply.raw.destroyed) return;
    this.reply.raw.write(`data: ${JSON.stringify({ id: this.id, object: this.job.chat ? 'chat.completion.chunk' : 'text_completion', created: this.created, model: this.model, choices, ...(usage !== undefined ? { usage } : {}) })}\n\n`);
  }
}
