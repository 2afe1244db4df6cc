/**
 * A scripted OpenAI-compatible engine for tests and the bench (docs/openai.md): `/v1/completions`
 * and `/v1/chat/completions`, streamed or not, paced one token every `tokenMs`; `/health`,
 * `/v1/models` and a vLLM-named `/metrics`. Its text is a pure function of the context (the prompt,
 * or the conversation, and what it generated so far), so a continuation from any point of a run
 * gives the rest of that run. It counts its open streams, and can be told to die mid-stream or to
 * refuse requests before their first byte.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The tokens it speaks: some are several bytes in UTF-8, one is a stop string's half. */
export const SCRIPT_WORDS = Object.freeze(['the ', 'swarm ', 'routes ', 'tokens ', 'é', '日本', '🙂 ', 'of ', 'ST', 'OP ', 'copies ', 'and ', 'ñ', 'light ', 'ü', 'engines ']);

/** Options of {@link startScriptedUpstream}. */
export interface ScriptedUpstreamOptions {
  /** The model id it serves. @defaultValue 'scripted' */
  readonly model?: string;
  /** Milliseconds between tokens; 0: as fast as the event loop goes. @defaultValue 5 */
  readonly tokenMs?: number;
  /**
   * A prefix cache (the bench's W7a-like workload): the context in blocks of `blockChars`, the
   * last `blocks` blocks seen kept (least recently used out), each block not cached costing `missMs`
   * before the first token. Its queries and hits (characters) are on `/metrics`.
   */
  readonly prefixCache?: { readonly blockChars: number; readonly blocks: number; readonly missMs: number };
}

/** A running scripted upstream. */
export interface ScriptedUpstream {
  readonly url: string;
  /** Streams open now (a response being written). */
  openStreams(): number;
  /** Requests received, by path. */
  readonly requests: Map<string, number>;
  /** The bodies of the completions received, in order (the last 2,048 to 4,096 of them). */
  readonly bodies: unknown[];
  /** From now on, every stream dies (its socket destroyed) after `tokens` tokens; undefined: never. */
  dieAfter(tokens: number | undefined): void;
  /** The next `count` completions are answered `status` before any byte. */
  refuse(count: number, status: number): void;
  /** Its health check answers 503 while false. */
  setHealthy(healthy: boolean): void;
  close(): Promise<void>;
}

/** FNV-1a over UTF-16 code units, from the hash `h` of what came before `text`: the script's choice of the next token. */
function hashOn(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const hash = (text: string): number => hashOn(0x811c9dc5, text);

/** The token of a context's hash. */
const tokenOf = (h: number): string => SCRIPT_WORDS[h % SCRIPT_WORDS.length] as string;

/** The next token after `context`. */
export function scriptedToken(context: string): string {
  return tokenOf(hash(context));
}

interface Msg { role: string; content: string }

/** The context a request starts from, and the text already generated (a continued assistant message). */
function contextOf(path: string, body: Record<string, unknown>): { base: string; generated: string } {
  if (path === '/v1/completions') {
    const p = body['prompt'];
    return { base: Array.isArray(p) ? p.join(' ') : String(p), generated: '' };
  }
  const messages = (body['messages'] as Msg[]).map((m) => ({ role: m.role, content: m.content }));
  const last = messages[messages.length - 1];
  if (body['continue_final_message'] === true && last?.role === 'assistant') return { base: JSON.stringify(messages.slice(0, -1)), generated: last.content };
  return { base: JSON.stringify(messages), generated: '' };
}

/** The whole run a request gets: its tokens, and why it ended. */
export function scriptedRun(path: string, body: Record<string, unknown>): { tokens: string[]; finish: 'stop' | 'length'; promptTokens: number } {
  const { base, generated } = contextOf(path, body);
  const max = typeof body['max_tokens'] === 'number' ? body['max_tokens'] : 16;
  const stops = body['stop'] === undefined ? [] : Array.isArray(body['stop']) ? (body['stop'] as string[]) : [body['stop'] as string];
  const tokens: string[] = [];
  // The context's hash carried on token by token (FNV-1a reads its text in order): a run costs its
  // length once, not once a token (the bench's engines share a process with the agents).
  let h = hash(base + generated);
  let out = '';
  while (tokens.length < max) {
    const t = tokenOf(h);
    const hit = stops.length === 0 ? [] : stops.map((s) => (out + t).indexOf(s)).filter((i) => i >= 0);
    if (hit.length > 0) {
      const cut = Math.min(...hit) - out.length;
      if (cut > 0) tokens.push(t.slice(0, cut));
      return { tokens, finish: 'stop', promptTokens: Math.ceil((base.length + generated.length) / 4) };
    }
    tokens.push(t);
    h = hashOn(h, t);
    if (stops.length > 0) out += t;
  }
  return { tokens, finish: 'length', promptTokens: Math.ceil((base.length + generated.length) / 4) };
}

/** Starts the scripted upstream on 127.0.0.1 (any free port). */
export async function startScriptedUpstream(options: ScriptedUpstreamOptions = {}): Promise<ScriptedUpstream> {
  const model = options.model ?? 'scripted';
  const tokenMs = options.tokenMs ?? 5;
  let open = 0;
  let dieAfter: number | undefined;
  let refusals = 0;
  let refusalStatus = 503;
  let healthy = true;
  const requests = new Map<string, number>();
  const bodies: unknown[] = [];
  let created = 0;
  const cached = new Map<string, true>();
  let queried = 0;
  let hits = 0;
  /** The prefill's wait: the context's blocks not cached, each `missMs`; every block cached after. */
  const prefill = (base: string): number => {
    const pc = options.prefixCache;
    if (pc === undefined) return 0;
    const n = Math.floor(base.length / pc.blockChars);
    let hit = 0;
    while (hit < n && cached.has(base.slice(0, (hit + 1) * pc.blockChars))) hit++;
    for (let k = 1; k <= n; k++) {
      const key = base.slice(0, k * pc.blockChars);
      cached.delete(key);
      cached.set(key, true);
    }
    for (const key of cached.keys()) {
      if (cached.size <= pc.blocks) break;
      cached.delete(key);
    }
    queried += n * pc.blockChars;
    hits += hit * pc.blockChars;
    return (n - hit) * pc.missMs;
  };

  const completion = (path: string, body: Record<string, unknown>, res: ServerResponse): void => {
    const chat = path === '/v1/chat/completions';
    const run = scriptedRun(path, body);
    const id = `scripted-${++created}`;
    const choice = (text: string, finish: string | null) => (chat ? { index: 0, delta: text === '' ? {} : { content: text }, finish_reason: finish } : { index: 0, text, finish_reason: finish });
    const usage = { prompt_tokens: run.promptTokens, completion_tokens: run.tokens.length, total_tokens: run.promptTokens + run.tokens.length, prompt_tokens_details: { cached_tokens: 0 } };
    const object = chat ? 'chat.completion.chunk' : 'text_completion';
    if (body['stream'] !== true) {
      const text = run.tokens.join('');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id, object: chat ? 'chat.completion' : 'text_completion', created: 0, model, choices: [chat ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: run.finish } : { index: 0, text, finish_reason: run.finish }], usage }));
      return;
    }
    open++;
    let closed = false;
    const end = (): void => {
      if (closed) return;
      closed = true;
      open--;
    };
    res.on('close', end);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    const die = dieAfter;
    let i = 0;
    const next = (): void => {
      if (closed) return;
      if (die !== undefined && i >= die) {
        res.destroy(); // the engine died mid-stream
        return;
      }
      if (i < run.tokens.length) {
        send({ id, object, created: 0, model, choices: [choice(run.tokens[i] as string, null)] });
        i++;
        if (tokenMs > 0) setTimeout(next, tokenMs);
        else setImmediate(next);
        return;
      }
      send({ id, object, created: 0, model, choices: [choice('', run.finish)] });
      const so = body['stream_options'] as { include_usage?: boolean } | undefined;
      if (so?.include_usage === true) send({ id, object, created: 0, model, choices: [], usage });
      res.end('data: [DONE]\n\n');
    };
    const wait = prefill(contextOf(path, body).base);
    if (wait > 0) setTimeout(next, wait);
    else next();
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    requests.set(path, (requests.get(path) ?? 0) + 1);
    if (req.method === 'GET') {
      if (path === '/health') {
        res.writeHead(healthy ? 200 : 503).end();
      } else if (path === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'scripted' }] }));
      } else if (path === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(`# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="${model}"} ${open}\nvllm:num_requests_waiting{model_name="${model}"} 0\nvllm:kv_cache_usage_perc{model_name="${model}"} 0\nvllm:prefix_cache_queries_total{model_name="${model}"} ${queried}\nvllm:prefix_cache_hits_total{model_name="${model}"} ${hits}\n`);
      } else res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (path !== '/v1/completions' && path !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      if (bodies.length >= 4096) bodies.splice(0, 2048); // a bench sends tens of thousands
      bodies.push(body);
      if (refusals > 0) {
        refusals--;
        res.writeHead(refusalStatus, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'scripted refusal', type: 'server_error', code: refusalStatus } }));
        return;
      }
      completion(path, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    openStreams: () => open,
    requests,
    bodies,
    dieAfter: (n) => {
      dieAfter = n;
    },
    refuse: (count, status) => {
      refusals = count;
      refusalStatus = status;
    },
    setHealthy: (h) => {
      healthy = h;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
