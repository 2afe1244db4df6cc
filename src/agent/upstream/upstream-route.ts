/**
 * The upstream agent's forwarding routes (docs/openai.md): `POST /v1/upstream/completions` and
 * `POST /v1/upstream/chat/completions` take an OpenAI request from the orchestrator (signed with the
 * swarm secret: stage-guard.ts checks it), send it to the engine under the engine's own model id, and stream its answer back
 * byte for byte, with the engine's load in `x-hecate-load`. The orchestrator hanging up aborts the
 * engine's request at once. A continued chat (`continue_final_message`) goes through the model's
 * chat template as a plain completion when the agent has one, so any engine can continue it.
 */
import { once } from 'node:events';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Agent, request as post, type Dispatcher } from 'undici';
import { DEFAULT_BODY_LIMIT } from '../../net/http-app.js';
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
}

/** Registers both forwarding routes on the agent's app. */
export function registerUpstreamRoutes(app: FastifyInstance, options: UpstreamRouteOptions): void {
  const base = options.engine.replace(/\/+$/, '');
  // undici's request over kept-alive connections, not fetch: no web streams per token (the agent's
  // largest per-token cost in bench/openai-upstream.ts's profile).
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  app.addHook('onClose', async () => {
    await dispatcher.destroy().catch(() => {});
  });
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
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        if (controller.signal.aborted) throw controller.signal.reason;
        reply.raw.write(chunk);
        // Back-pressure past 64 KB only: a response's write() answers false for every chunk while
        // its first bytes are in flight, and waiting for each 'drain' held every token a beat.
        if (reply.raw.writableLength > 65_536) await once(reply.raw, 'drain', { signal: controller.signal });
      }
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
