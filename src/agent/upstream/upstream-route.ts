/**
 * The upstream agent's forwarding routes (docs/openai.md): `POST /v1/upstream/completions` and
 * `POST /v1/upstream/chat/completions` take an OpenAI request from the orchestrator (signed with the
 * swarm secret), send it to the engine under the engine's own model id, and stream its answer back
 * byte for byte, with the engine's load in `x-hecate-load`. The orchestrator hanging up aborts the
 * engine's request at once. A continued chat (`continue_final_message`) goes through the model's
 * chat template as a plain completion when the agent has one, so any engine can continue it.
 */
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Agent, request as post, type Dispatcher } from 'undici';
import type { TimeSource } from '../../runtime/types.js';
import { rawBody } from '../../net/raw-body.js';
import { DEFAULT_BODY_LIMIT } from '../../net/http-app.js';
import { NonceCache } from '../../wire/nonce-cache.js';
import { checkSignatureHeaders, DEFAULT_MAX_SKEW_MS, verifySignature } from '../../wire/request-signing.js';
import { ServeError } from '../../wire/serve-error.js';
import type { ChatMessage, ChatTemplate } from '../../wire/chat-prompt.js';
import type { EngineWatch } from './engine-watch.js';

const UPSTREAM_COMPLETIONS = '/v1/upstream/completions';
const UPSTREAM_CHAT = '/v1/upstream/chat/completions';
/** The paths the orchestrator forwards to, under `/v1/upstream`. */
export const UPSTREAM_PATHS = Object.freeze({ completions: UPSTREAM_COMPLETIONS, chat: UPSTREAM_CHAT });

/** The header an upstream agent's answers carry the engine's load in (0-1). */
export const LOAD_HEADER = 'x-hecate-load';

/** What the forwarding routes need. */
export interface UpstreamRouteOptions {
  /** The engine's base URL, without `/v1`. */
  readonly engine: string;
  readonly key?: string;
  /** The engine's model id. */
  model(): Promise<string>;
  readonly watch: EngineWatch;
  readonly template?: ChatTemplate;
  /** The swarm secret: forwarded calls must be signed with it. */
  readonly secret?: Uint8Array;
  readonly clock: TimeSource;
}

/** Registers both forwarding routes on the agent's app. */
export function registerUpstreamRoutes(app: FastifyInstance, options: UpstreamRouteOptions): void {
  const base = options.engine.replace(/\/+$/, '');
  const secret = options.secret;
  // undici's request over kept-alive connections, not fetch: no web streams per token (the agent's
  // largest per-token cost in bench/openai-upstream.ts's profile).
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  app.addHook('onClose', async () => {
    await dispatcher.destroy().catch(() => {});
  });
  if (secret !== undefined) {
    const nonces = new NonceCache(2 * DEFAULT_MAX_SKEW_MS);
    const guarded = (url: string | undefined): boolean => url === UPSTREAM_PATHS.completions || url === UPSTREAM_PATHS.chat;
    app.addHook('onRequest', async (request) => {
      if (!guarded(request.routeOptions.url)) return; // its headers first, before its body is read
      const refused = checkSignatureHeaders(request.headers, options.clock.now(), nonces, DEFAULT_MAX_SKEW_MS);
      if (refused !== undefined) throw new ServeError('Unauthenticated', 401, `forwarded call refused: ${refused}`, { field: 'headers' });
    });
    app.addHook('preValidation', async (request) => {
      if (!guarded(request.routeOptions.url)) return;
      const verdict = verifySignature(secret, { method: request.method, path: request.url, headers: request.headers, body: rawBody(request) }, options.clock.now(), nonces, DEFAULT_MAX_SKEW_MS);
      if (!verdict.ok) throw new ServeError('Unauthenticated', 401, `forwarded call refused: ${verdict.reason}`, { field: 'headers' });
    });
  }
  const forward = (chat: boolean) => async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const body = request.body as Record<string, unknown> | null;
    if (body === null || typeof body !== 'object') throw new ServeError('InvalidRequest', 400, 'a forwarded completion needs a JSON object body', { field: 'body' });
    const { path, sent } = engineRequest(chat, { ...body, model: await options.model() }, options.template);
    const controller = new AbortController();
    let response: Dispatcher.ResponseData | undefined;
    const hangUp = (): void => {
      if (reply.raw.writableFinished) return;
      const why = new Error('the orchestrator hung up');
      controller.abort(why);
      // The body too: an abort signal alone was seen (with fetch) to leave a body being read
      // streaming to its end, the engine generating for nobody (test/orchestrator/openai/openai-drain.test.ts).
      response?.body.destroy(why);
    };
    reply.raw.once('close', hangUp);
    try {
      response = await post(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(options.key !== undefined ? { authorization: `Bearer ${options.key}` } : {}) }, body: JSON.stringify(sent), signal: controller.signal, dispatcher });
    } catch (error) {
      reply.raw.off('close', hangUp);
      if (!controller.signal.aborted) options.watch.failed((error as Error).message);
      throw new ServeError('StageFailed', 502, `engine ${base} did not answer: ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`);
    }
    const status = response.statusCode;
    if (status >= 500) options.watch.failed(`${path} answered ${status}`);
    const load = options.watch.load();
    const type = response.headers['content-type'];
    reply.hijack();
    reply.raw.writeHead(status, { 'content-type': (Array.isArray(type) ? type[0] : type) ?? 'application/json', 'cache-control': 'no-cache', ...(load !== undefined ? { [LOAD_HEADER]: load.toFixed(3) } : {}) });
    try {
      await relay(response.body, reply.raw);
      reply.raw.end();
    } catch (error) {
      // The engine died mid-answer, or the orchestrator went away: the answer is cut, never ended as if whole.
      if (!controller.signal.aborted) options.watch.failed(`${path} broke mid-answer: ${(error as Error).message}`);
      controller.abort(error);
      response.body.destroy();
      reply.raw.destroy();
    } finally {
      reply.raw.off('close', hangUp);
    }
  };
  // What the orchestrator forwards is a client's body (at most DEFAULT_BODY_LIMIT) written again.
  app.post(UPSTREAM_COMPLETIONS, { bodyLimit: 2 * DEFAULT_BODY_LIMIT }, forward(false));
  app.post(UPSTREAM_CHAT, { bodyLimit: 2 * DEFAULT_BODY_LIMIT }, forward(true));
}

/**
 * Writes each chunk of the engine's `body` to `out` as it arrives (its `data` events: no promise
 * per token), until the body ends; rejects when it fails or closes unfinished. Back-pressure past
 * 64 KB only: a response's write() answers false for every chunk while its first bytes are in
 * flight, and waiting for each 'drain' held every token a beat.
 */
function relay(body: Readable, out: ServerResponse): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let ended = false;
    body.on('data', (chunk: Buffer) => {
      out.write(chunk);
      if (out.writableLength > 65_536 && !body.isPaused()) {
        body.pause();
        out.once('drain', () => body.resume());
      }
    });
    body.once('end', () => {
      ended = true;
      resolve();
    });
    body.once('error', reject);
    body.once('close', () => {
      if (!ended) reject(new Error('the engine\'s answer closed before its end'));
    });
  });
}

/**
 * The engine's path and body for a forwarded request: as given, except a continued chat with a
 * template, which becomes a completion of the rendered conversation followed by the assistant's
 * text so far.
 */
export function engineRequest(chat: boolean, body: Record<string, unknown>, template?: ChatTemplate): { path: string; sent: Record<string, unknown> } {
  if (!chat) return { path: '/v1/completions', sent: body };
  const messages = body['messages'] as ChatMessage[] | undefined;
  const last = messages?.[messages.length - 1];
  if (template === undefined || body['continue_final_message'] !== true || messages === undefined || last?.role !== 'assistant') return { path: '/v1/chat/completions', sent: body };
  const { messages: _m, continue_final_message: _c, add_generation_prompt: _a, ...rest } = body;
  return { path: '/v1/completions', sent: { ...rest, prompt: template.render(messages.slice(0, -1), true) + last.content } };
}
