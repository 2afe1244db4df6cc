/**
 * The upstream agent's forwarding routes (docs/openai.md): `POST /v1/upstream/completions` and
 * `POST /v1/upstream/chat/completions` take an OpenAI request from the orchestrator (signed with the
 * swarm secret: stage-guard.ts checks it), send it to the engine under the engine's own model id, and stream its answer back
 * byte for byte, with the engine's load in `x-hecate-load`. The orchestrator hanging up aborts the
 * engine's request at once. A continued chat (`continue_final_message`) goes through the model's
 * chat template as a plain completion when the agent has one, so any engine can continue it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Agent, type Dispatcher } from 'undici';
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
  // undici's dispatcher over kept-alive connections (relayEngine): neither fetch's web streams nor a
  // Node stream per answer (fetch's were the agent's largest per-token cost in bench/openai-upstream.ts's profile).
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  app.addHook('onClose', async () => {
    await dispatcher.destroy().catch(() => {});
  });
  const target = new URL(base);
  const prefix = target.pathname.replace(/\/+$/, '');
  const forward = (chat: boolean) => async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const body = request.body as Record<string, unknown> | null;
    if (body === null || typeof body !== 'object') throw new ServeError('InvalidRequest', 400, 'a forwarded completion needs a JSON object body', { field: 'body' });
    const { path, sent } = engineRequest(chat, { ...body, model: await options.model() }, options.template);
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(options.key !== undefined ? { authorization: `Bearer ${options.key}` } : {}) };
    await new Promise<void>((resolve, reject) => {
      relayEngine(dispatcher, { origin: target.origin, path: `${prefix}${path}`, headers, body: JSON.stringify(sent) }, reply, {
        answered(status, type) {
          if (status >= 500) options.watch.failed(`${path} answered ${status}`);
          const load = options.watch.load();
          reply.hijack();
          reply.raw.writeHead(status, { 'content-type': type ?? 'application/json', 'cache-control': 'no-cache', ...(load !== undefined ? { [LOAD_HEADER]: load.toFixed(3) } : {}) });
        },
        ended: resolve,
        failed(error, answered, hungUp) {
          if (!hungUp) options.watch.failed(answered ? `${path} broke mid-answer: ${error.message}` : error.message);
          if (answered) return resolve(); // the answer is cut, never ended as if whole
          reject(new ServeError('StageFailed', 502, `engine ${base} did not answer: ${(error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code ?? error.message}`));
        },
      });
    });
  };
  // What the orchestrator forwards is a client's body (at most DEFAULT_BODY_LIMIT) written again.
  app.post(UPSTREAM_COMPLETIONS, { bodyLimit: 2 * DEFAULT_BODY_LIMIT }, forward(false));
  app.post(UPSTREAM_CHAT, { bodyLimit: 2 * DEFAULT_BODY_LIMIT }, forward(true));
}

/** How {@link relayEngine}'s call went. */
interface RelayEvents {
  /** The engine answered `status` (its content type): the response's head goes now. */
  answered(status: number, type: string | undefined): void;
  /** The whole answer was relayed and the response ended. */
  ended(): void;
  /** The call failed: before its answer (nothing sent yet), or midway (the response destroyed); `hungUp` when the orchestrator's going ended it. */
  failed(error: Error, answered: boolean, hungUp: boolean): void;
}

/**
 * One engine call through undici's dispatcher, its answer written to `reply` as it arrives: a
 * handler's callbacks, no stream, promise or abort signal per call or per chunk (the agent relays
 * every token of every answer). Back-pressure past 64 KB only: a response's write() answers false
 * for every chunk while its first bytes are in flight, and waiting for each 'drain' held every
 * token a beat. The orchestrator hanging up aborts the engine's request at once.
 */
function relayEngine(dispatcher: Dispatcher, call: { origin: string; path: string; headers: Record<string, string>; body: string }, reply: FastifyReply, on: RelayEvents): void {
  const out = reply.raw;
  let abort: ((error: Error) => void) | undefined;
  let resume: (() => void) | undefined;
  let hungUp = false;
  let answered = false;
  let done = false;
  const hangUp = (): void => {
    if (done || out.writableFinished) return;
    hungUp = true;
    abort?.(new Error('the orchestrator hung up'));
  };
  out.once('close', hangUp);
  const finish = (): void => {
    done = true;
    out.off('close', hangUp);
  };
  dispatcher.dispatch({ origin: call.origin, path: call.path, method: 'POST', headers: call.headers, body: call.body }, {
    onConnect(a: (error?: Error) => void) {
      abort = a;
      if (hungUp) a(new Error('the orchestrator hung up'));
    },
    onHeaders(status: number, raw: Buffer[], go: () => void) {
      if (status < 200) return true; // an informational head (103 Early Hints): the engine's answer comes next
      answered = true;
      resume = go;
      let type: string | undefined;
      for (let i = 0; i + 1 < raw.length; i += 2) if ((raw[i] as Buffer).toString('latin1').toLowerCase() === 'content-type') type = (raw[i + 1] as Buffer).toString('latin1');
      on.answered(status, type);
      return true;
    },
    onData(chunk: Buffer) {
      out.write(chunk);
      if (out.writableLength <= 65_536) return true;
      out.once('drain', () => resume?.());
      return false;
    },
    onComplete() {
      finish();
      out.end();
      on.ended();
    },
    onError(error: Error) {
      finish();
      if (answered) out.destroy();
      on.failed(error, answered, hungUp);
    },
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
