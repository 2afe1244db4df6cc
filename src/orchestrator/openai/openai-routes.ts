/**
 * The OpenAI door of `hecate-node serve` (docs/openai.md): `GET /v1/models`,
 * `POST /v1/completions` and `POST /v1/chat/completions`, streamed as OpenAI's chunks ending in
 * `data: [DONE]` or answered whole, over the swarm's upstream copies (upstream-completion.ts). A bearer
 * key picks the caller's class (client-classes.ts: priority, deadline, in-flight limit); errors
 * come in OpenAI's error object (openai-error.ts). Nothing is sent before the first piece of text,
 * so a request refused or failed before it gets a real status.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PeerPost, PeerStream } from '../../net/peer-post.js';
import { sameSecret } from '../../wire/request-signing.js';
import { ServeError } from '../../wire/serve-error.js';
import { conversationPrompt, DEFAULT_CHAT_TEMPLATE, type ChatTemplate } from '../../wire/chat-prompt.js';
import { SessionError } from '../../core/errors.js';
import { classOf, classTokens, type ClientClass, type ClientClasses } from '../client-classes.js';
import type { OrchestratorParts } from '../orchestrator-parts.js';
import { runCompletion, type CompletionOutcome } from './upstream-completion.js';
import { openAIError, openAIErrorHandler } from '../../net/openai-error.js';
import { asServeError } from '../error-answers.js';
import { checkCompletionRequest, type CompletionJob } from '../../wire/openai-request.js';
import type { LocalCompletions } from '../completions-route.js';
import type { DrainGate } from '../drain-gate.js';
import { runLocalChat } from './local-chat.js';

/** Options of {@link registerOpenAIRoutes}. */
export interface OpenAIRouteOptions {
  /** Sends the forwarded calls to the agents (signed: peer-post.ts). */
  readonly post: PeerPost;
  /** Forwards them, each answer read as it arrives (peer-stream.ts); without it, `post`. */
  readonly stream?: PeerStream;
  /** Client classes: a bearer key is a class's token (docs/openai.md, "Keys"). */
  readonly classes?: ClientClasses;
  /** When set, every request needs `authorization: Bearer` with it or a class's token. */
  readonly clientToken?: Uint8Array;
  /** A request must finish within this. @defaultValue 60000 */
  readonly deadlineMs?: number;
  /** Engine failures one request survives. @defaultValue 3 */
  readonly retries?: number;
  /** How long an agent may take to start answering. @defaultValue 30000 */
  readonly firstByteMs?: number;
  /**
   * The model's chat template: the conversation the prefix index keys on is rendered with it, and
   * a chat on real tokens (`local`) is prompted with it. @defaultValue for `local` chats, {@link DEFAULT_CHAT_TEMPLATE}
   */
  readonly chatTemplate?: ChatTemplate;
  /** Completions and chats of the models served with their tokenizer (`serve --model`: completions-route.ts), run on real tokens here. */
  readonly local?: LocalCompletions;
  /** The drain's gate (drain-gate.ts): every request passes it, so a drain waits for them and then hands them back. */
  readonly gate?: DrainGate;
}

/** Registers the OpenAI routes in their own scope (their errors in OpenAI's shape). */
export function registerOpenAIRoutes(app: FastifyInstance, parts: OrchestratorParts, options: OpenAIRouteOptions): void {
  const keys = [...(options.clientToken !== undefined ? [Buffer.from(options.clientToken).toString('utf8')] : []), ...(options.classes !== undefined ? classTokens(options.classes) : [])];
  const authenticate = (request: FastifyRequest): void => {
    if (options.clientToken === undefined) return;
    const bearer = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (bearer === undefined || !keys.some((k) => sameSecret(bearer, k))) throw new ServeError('Unauthenticated', 401, 'header authorization: needs "Bearer <API key>" (the client token, or a class token of --classes)', { field: 'authorization' });
  };
  void app.register(async (scope) => {
    scope.setErrorHandler(openAIErrorHandler(asServeError));
    scope.get('/v1/models', async (request) => {
      authenticate(request);
      return { object: 'list', data: parts.models.map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: 'hecate-swarm' })) };
    });
    scope.post('/v1/completions', (request, reply) => complete(request, reply, false));
    scope.post('/v1/chat/completions', (request, reply) => complete(request, reply, true));
  });

  const complete = async (request: FastifyRequest, reply: FastifyReply, chat: boolean): Promise<unknown> => {
    authenticate(request);
    const model = (request.body as { model?: unknown } | null)?.model;
    const local = options.local !== undefined && typeof model === 'string' && options.local.serves(model) ? options.local : undefined;
    if (!chat && local !== undefined) {
      const passed = options.gate?.enter(); // 503 Draining once a drain began
      try {
        return await local.handle(request, reply, passed?.signal); // handed back by a drain past its grace period
      } finally {
        if (passed !== undefined) options.gate?.leave(passed);
      }
    }
    const job = checkCompletionRequest(request.body, chat);
    if (!parts.models.some((m) => m.id === job.model)) throw new ServeError('NotFound', 404, `model "${job.model.slice(0, 200)}" is not served here (GET /v1/models: ${parts.models.map((m) => m.id).join(', ')})`, { field: 'model' });
    const swarm = parts.seat.local();
    if (swarm === undefined) throw new ServeError('NoSwarm', 503, `no swarm yet: the agents that joined cannot hold every copy of ${parts.models.map((m) => `"${m.id}"`).join(', ')}`, { retryAfterMs: 1000 });
    const cls: ClientClass | undefined = options.classes === undefined ? undefined : classOf(options.classes, request.headers);
    const passed = options.gate?.enter(); // 503 Draining once a drain began
    try {
      if (cls !== undefined) parts.classLimits.enter(cls, 1000);
    } catch (error) {
      if (passed !== undefined) options.gate?.leave(passed);
      throw error;
    }
    const deadlineMs = Math.min(cls?.deadlineMs ?? Number.POSITIVE_INFINITY, options.deadlineMs ?? 60_000);
    // One signal for the request: the client hanging up, its deadline, or a drain handing it back
    // (listeners on one controller: AbortSignal.any and a controller each cost more, per request).
    const stop = new AbortController();
    const signal = stop.signal;
    let hungUp = false;
    const onClose = (): void => {
      if (reply.raw.writableFinished) return;
      hungUp = true;
      stop.abort(new SessionError('Aborted', 'the client went away before the answer'));
    };
    reply.raw.once('close', onClose);
    const timer = parts.clock.setTimeout(() => stop.abort(new ServeError('SessionFailed', 504, `the request did not finish within its deadline of ${deadlineMs} ms`)), deadlineMs);
    const handedBack = (): void => stop.abort(passed?.signal.reason);
    passed?.signal.addEventListener('abort', handedBack, { once: true });
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${nextId()}`;
    const created = Math.floor(parts.clock.now() / 1000);
    const sse = job.stream ? new SseAnswer(reply, id, created, job) : undefined;
    let whole = '';
    try {
      const emit = (text: string): void => {
        if (sse !== undefined) sse.text(text);
        else whole += text;
      };
      const outcome = local !== undefined
        ? await runLocalChat(local, options.chatTemplate ?? DEFAULT_CHAT_TEMPLATE, job, signal, emit)
        : await runCompletion({ swarm, registry: parts.registry, clock: parts.clock, post: options.post, ...(options.stream !== undefined ? { stream: options.stream } : {}), affinity: chat ? conversationPrompt(job.messages ?? [], options.chatTemplate) : (job.prompt ?? ''), priority: cls?.priority ?? 0, deadlineMs, signal, ...(options.retries !== undefined ? { retries: options.retries } : {}), ...(options.firstByteMs !== undefined ? { firstByteMs: options.firstByteMs } : {}) }, job, emit);
      parts.metrics.requests.inc({ outcome: 'ok' });
      if (sse !== undefined) {
        sse.end(outcome);
        return reply;
      }
      const usage = usageOf(outcome);
      return chat
        ? { id, object: 'chat.completion', created, model: job.model, choices: [{ index: 0, message: { role: 'assistant', content: whole }, logprobs: null, finish_reason: outcome.finish }], usage }
        : { id, object: 'text_completion', created, model: job.model, choices: [{ index: 0, text: whole, logprobs: null, finish_reason: outcome.finish }], usage };
    } catch (error) {
      // Handed back by a drain, or past its deadline: answered so (a hang-up has nobody to answer).
      const answered = signal.aborted && !hungUp ? signal.reason : error;
      parts.metrics.requests.inc({ outcome: hungUp ? 'Cancelled' : answered instanceof ServeError ? answered.code : 'Internal' });
      if (sse?.started() === true) {
        sse.fail(answered); // midway: the stream ends with OpenAI's error event
        return reply;
      }
      throw answered;
    } finally {
      parts.clock.clearTimeout(timer);
      reply.raw.off('close', onClose);
      passed?.signal.removeEventListener('abort', handedBack);
      if (cls !== undefined) parts.classLimits.leave(cls);
      if (passed !== undefined) options.gate?.leave(passed);
    }
  };
}

/** This process's prefix of answer ids, then a count: unique ids without random bytes drawn per request. */
const ID_PREFIX = randomBytes(8).toString('hex');
let idCount = 0;
const nextId = (): string => `${ID_PREFIX}${(++idCount).toString(16).padStart(8, '0')}`;

/** OpenAI's `usage`. */
function usageOf(o: CompletionOutcome): Record<string, unknown> {
  return { prompt_tokens: o.promptTokens, completion_tokens: o.completionTokens, total_tokens: o.promptTokens + o.completionTokens, prompt_tokens_details: { cached_tokens: o.cachedTokens } };
}

/** A streamed answer: its headers go with the first piece of text, each piece is one chunk. */
class SseAnswer {
  private open = false;
  private readonly object: string;
  /** Every chunk's text up to its choices, written once: a piece costs only its text's JSON. */
  private readonly head: string;

  constructor(
    private readonly reply: FastifyReply,
    private readonly id: string,
    private readonly created: number,
    private readonly job: CompletionJob,
  ) {
    this.object = job.chat ? 'chat.completion.chunk' : 'text_completion';
    this.head = `data: {"id":${JSON.stringify(id)},"object":"${this.object}","created":${created},"model":${JSON.stringify(job.model)},"choices":[{"index":0,${job.chat ? '"delta":{"content":' : '"text":'}`;
  }

  started(): boolean {
    return this.open;
  }

  text(text: string): void {
    this.start();
    if (!this.reply.raw.destroyed) this.reply.raw.write(`${this.head}${JSON.stringify(text)}${this.job.chat ? '}' : ''},"logprobs":null,"finish_reason":null}]}\n\n`);
  }

  end(outcome: CompletionOutcome): void {
    this.start();
    this.send([this.job.chat ? { index: 0, delta: {}, logprobs: null, finish_reason: outcome.finish } : { index: 0, text: '', logprobs: null, finish_reason: outcome.finish }]);
    if (this.job.includeUsage) this.send([], usageOf(outcome));
    this.reply.raw.end('data: [DONE]\n\n');
  }

  fail(error: unknown): void {
    const { body } = openAIError(error, asServeError);
    if (!this.reply.raw.destroyed) this.reply.raw.end(`data: ${JSON.stringify(body)}\n\n`);
  }

  private start(): void {
    if (this.open) return;
    this.open = true;
    this.reply.hijack();
    this.reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    // Chat's first chunk names the role, as OpenAI's does.
    if (this.job.chat) this.send([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  }

  private send(choices: unknown[], usage?: unknown): void {
    if (this.reply.raw.destroyed) return;
    this.reply.raw.write(`data: ${JSON.stringify({ id: this.id, object: this.object, created: this.created, model: this.job.model, choices, ...(usage !== undefined ? { usage } : {}) })}\n\n`);
  }
}
