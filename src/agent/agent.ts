/**
 * The stand-in stage server of `hecate-node agent`: no model, real time and a checked digest
 * (stage-work.ts). It joins an orchestrator, heartbeats, serves `POST /v1/stage`, keeps each
 * session's per-layer caches for later steps (a replacement is rebuilt from the replay it is
 * sent), and leaves on `stop()`.
 */
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../runtime/clock.js';
import type { Clock, TimeSource } from '../runtime/types.js';
import { runLayers, type LayerCaches } from '../core/digest-model.js';
import type { AgentKey } from '../wire/agent-key.js';
import { guardStageCalls } from './stage-guard.js';
import { createHttpApp, listen } from '../net/http-app.js';
import { registerDropRoute } from './drop-route.js';
import { SessionDrops } from './session-drops.js';
import { createPeerPoster } from '../net/peer-post.js';
import { ServeError } from '../wire/serve-error.js';
import { checkStageRequest, DEFAULT_MAX_STAGE_MS, STAGE_LIMITS, timerDelay } from '../wire/stage-bounds.js';
import { hashText } from '../wire/digest.js';
import { stageDelayMs } from './engines/digest-time.js';
import { AgentPrefixCache } from './engines/digest-prefix-cache.js';
import { stageBodySchema, type StageReply, type StageRequest } from '../wire/stage-protocol.js';
import { serverTls, type TlsOptions } from '../net/tls-options.js';

/** Options of {@link startAgent}. */
export interface AgentOptions {
  readonly id: string;
  readonly memoryGb: number;
  readonly score: number;
  /**
   * The orchestrator's base URL, e.g. `http://127.0.0.1:8080`, or several orchestrators of one
   * replicated swarm (docs/serve.md, "Several orchestrators"): the agent talks to one at a time and
   * moves to the next when it cannot reach it.
   */
  readonly join: string | readonly string[];
  /** @defaultValue 0 (any free port) */
  readonly port?: number;
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** Real milliseconds one layer takes for one token at score 1. @defaultValue 2 */
  readonly perLayerMs?: number;
  /** Relative jitter of a call's time, in [0, 1). @defaultValue 0.2 */
  readonly jitter?: number;
  /** Seeds the jitter and the lies. @defaultValue a hash of the id */
  readonly seed?: number;
  /**
   * Tests and benches only: the share of stage calls answered with a wrong output (drawn from
   * `seed` and the call), a lying node for verification to catch (docs/security.md). @defaultValue 0
   */
  readonly lieRate?: number;
  /** @defaultValue 1000 */
  readonly heartbeatMs?: number;
  /** Sessions whose caches are kept; the least recently used is dropped past it. @defaultValue 4096 */
  readonly maxSessions?: number;
  /**
   * The longest a stage call may be computed to take; a longer one is refused (422, field
   * `tokens`) before it runs (docs/serve.md, "Limits"). @defaultValue 60000 (the orchestrator's deadline)
   */
  readonly maxStageMs?: number;
  /**
   * Stage calls it runs at once; later ones wait in arrival order (a GPU serving one batch at a
   * time). The reply's `ms` includes the wait. @defaultValue unlimited: every call runs at once
   */
  readonly slots?: number;
  /**
   * Times the stage work (its delay and the reply's `ms`), the join retries and the heartbeats.
   * The agent is its own process: its clock is not the orchestrator's. Request timeouts stay on
   * the host's timers. @defaultValue systemClock
   */
  readonly clock?: Clock;
  /**
   * The swarm secret and the agent's own key pair (docs/security.md): its joins, heartbeats and
   * leaves are signed with both, and stage calls not signed with the secret are refused (401).
   * `clock` stamps and checks the signatures: wall time. Without it nothing is signed or checked.
   */
  readonly auth?: { readonly secret: Uint8Array; readonly key: AgentKey; readonly clock?: TimeSource };
  /** Serve stage calls over https with `cert` and `key`; trust `ca` when calling the orchestrator. */
  readonly tls?: TlsOptions;
  /** Told about joins and failures to reach the orchestrator. */
  readonly log?: (line: string) => void;
  /**
   * KV memory kept for the prefixes of the prompts it ran, GB (agent-prefix-cache.ts): a prompt's
   * cached leading tokens cost no prefill time. @defaultValue a quarter of `memoryGb`
   */
  readonly kvCacheGb?: number;
  /** Adds routes to its server before it listens (an upstream agent's: src/agent/upstream/). */
  readonly routes?: (app: FastifyInstance) => void;
  /** While this answers false no heartbeat goes out: what it fronts is down (docs/openai.md, "Health"). */
  readonly healthy?: () => boolean;
}

/** A running agent. */
export interface RunningAgent {
  readonly id: string;
  /** Its own base URL, as it told the orchestrator. */
  readonly url: string;
  /** Resolves once the orchestrator accepted the join. */
  readonly joined: Promise<void>;
  /** The orchestrator it talks to now (the first of `join` until that one cannot be reached). */
  orchestrator(): string;
  /** Leaves the orchestrator (best effort, bounded), stops heartbeats and closes the server. */
  stop(): Promise<void>;
}

/** Starts an agent: listens, then joins `options.join` (retrying until it answers) and heartbeats. */
export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const perLayerMs = options.perLayerMs ?? 2;
  const jitter = options.jitter ?? 0.2;
  const seed = options.seed ?? hashText(options.id);
  const lieRate = options.lieRate ?? 0;
  const heartbeatMs = options.heartbeatMs ?? 1000;
  const maxSessions = options.maxSessions ?? 4096;
  const maxStageMs = options.maxStageMs ?? DEFAULT_MAX_STAGE_MS;
  /** The swarm's models (layers by id), as the orchestrator's answer to the join gave them. */
  let models: Map<string, number> | undefined;
  /** Layer caches held over every session: bounded by {@link STAGE_LIMITS}.cachedLayers. */
  let cachedLayers = 0;
  const slots = options.slots ?? Number.POSITIVE_INFINITY;
  let busy = 0;
  const queue: (() => void)[] = [];
  /** Resolves once a slot is this call's; rejects, leaving the queue, if `signal` aborts first. */
  const acquire = (signal: AbortSignal): Promise<void> => {
    if (busy < slots) {
      busy++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const take = (): void => {
        signal.removeEventListener('abort', leave);
        resolve();
      };
      const leave = (): void => {
        const at = queue.indexOf(take);
        if (at >= 0) queue.splice(at, 1);
        reject(signal.reason);
      };
      queue.push(take);
      signal.addEventListener('abort', leave, { once: true });
    });
  };
  /** Hands the slot to the next waiting call, or frees it. */
  const release = (): void => {
    const next = queue.shift();
    if (next !== undefined) next();
    else busy--;
  };
  const log = options.log ?? (() => {});
  const clock = options.clock ?? systemClock;
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(() => resolve(), timerDelay(ms)));
  /** The stage work's wait, cut short (rejecting) when the call is cancelled. */
  const work = (ms: number, signal: AbortSignal) => new Promise<void>((resolve, reject) => {
    const done = (): void => {
      signal.removeEventListener('abort', cancel);
      resolve();
    };
    const timer = clock.setTimeout(done, timerDelay(ms));
    const cancel = (): void => {
      clock.clearTimeout(timer);
      reject(signal.reason);
    };
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
  });
  const bases = (typeof options.join === 'string' ? [options.join] : [...options.join]).map((u) => u.replace(/\/+$/, ''));
  if (bases.length === 0) throw new ServeError('InvalidRequest', 400, 'startAgent needs at least one orchestrator URL in join', { field: 'join' });
  let current = 0;
  const base = (): string => bases[current] as string;
  /** `failed` could not be reached: the next orchestrator, if it is still the one we talk to. */
  const failOver = (failed: number, what: string): boolean => {
    if (bases.length === 1 || failed !== current) return false;
    current = (current + 1) % bases.length;
    log(`${what}: ${bases[failed]} unreachable; now talking to ${base()}`);
    return true;
  };
  const sessions = new Map<string, LayerCaches>();
  /** Running calls per session, and sessions dropped lately (docs/serve.md, "Cancellation"). */
  const drops = new SessionDrops(clock);
  const prefixes = new AgentPrefixCache(options.kvCacheGb ?? options.memoryGb / 4);

  if (options.auth !== undefined && options.auth.key.id !== options.id) throw new ServeError('InvalidRequest', 400, `agent "${options.id}" was given the key of agent "${options.auth.key.id}"`, { field: 'auth' });
  const app: FastifyInstance = createHttpApp(serverTls(options.tls));
  if (options.auth !== undefined) guardStageCalls(app, options.auth.secret, options.auth.clock);
  app.get('/v1/health', async () => ({ id: options.id, sessions: sessions.size, running: busy, queued: queue.length, calls: drops.runningCalls(), drops: drops.drops }));
  registerDropRoute(app, options.id, drops, (sessionId) => {
    const held = sessions.get(sessionId);
    if (held === undefined) return false;
    sessions.delete(sessionId);
    cachedLayers -= held.size;
    return true;
  });
  app.post<{ Body: StageRequest }>('/v1/stage', { schema: { body: stageBodySchema } }, async (request, reply): Promise<StageReply> => {
    const body = request.body;
    const layers = body.layerEnd - body.layerStart;
    const timeOf = (tokens: number) => stageDelayMs({ layers, tokens, perLayerMs, score: options.score }, jitter, seed, `${body.sessionId}/${body.step}/${body.layerStart}`);
    checkStageRequest(body, models, timeOf(body.tokens + body.replay.length), maxStageMs); // before any time or memory is spent on it
    let cachedTokens: number | undefined;
    let caches = sessions.get(body.sessionId);
    // A node asked to continue a session it holds nothing of (it restarted) refuses, as a server would.
    if (caches === undefined && !body.fresh) throw new ServeError('UnknownSession', 409, `agent "${options.id}" holds no state of session "${body.sessionId}" (restarted?); send fresh with the replay`, { field: 'sessionId' });
    const started = clock.now();
    // Cancelled when the session is dropped or the orchestrator hangs up (it gave the call up).
    const call = drops.begin(body.sessionId, options.id);
    const hangUp = (): void => {
      if (!reply.raw.writableFinished) call.abort(new ServeError('UnknownSession', 409, `the caller of session "${body.sessionId}" went away`, { field: 'sessionId' }));
    };
    reply.raw.once('close', hangUp);
    try {
      await acquire(call.signal);
      try {
        // Prefill is charged for the prompt's uncached tokens only (the bound above held for all of
        // them); a call refused or cancelled before its slot leaves the prefix cache as it was.
        cachedTokens = body.prompt === undefined ? undefined : prefixes.serve(body.modelId, body.layerStart, body.layerEnd, models?.get(body.modelId) ?? body.layerEnd, body.prompt, body.tokens);
        await work(timeOf(Math.max(1, body.tokens - (cachedTokens ?? 0)) + body.replay.length), call.signal);
      } finally {
        release();
      }
    } finally {
      drops.end(body.sessionId, call);
      reply.raw.off('close', hangUp);
    }
    caches = sessions.get(body.sessionId);
    if (caches === undefined) caches = new Map();
    sessions.delete(body.sessionId); // re-inserted last: the Map's order is the LRU order
    sessions.set(body.sessionId, caches);
    cachedLayers -= caches.size;
    if (body.fresh) for (let layer = body.layerStart; layer < body.layerEnd; layer++) caches.delete(layer);
    const replayOutputs = body.replay.map((x) => runLayers(x, body.layerStart, body.layerEnd, caches));
    const honest = runLayers(body.input, body.layerStart, body.layerEnd, caches);
    const output = lieRate > 0 && hashText(`${body.sessionId}/${body.step}/${body.layerStart}`, seed ^ 0x5bd1e995) / 0x1_0000_0000 < lieRate ? (honest ^ 0x1) >>> 0 : honest;
    cachedLayers += caches.size;
    // The least recently used sessions go past either bound (sessions kept, layer caches held).
    for (const [oldest, held] of sessions) {
      if (sessions.size <= maxSessions && cachedLayers <= STAGE_LIMITS.cachedLayers) break;
      if (oldest === body.sessionId) break;
      sessions.delete(oldest);
      cachedLayers -= held.size;
    }
    return { nodeId: options.id, layerStart: body.layerStart, layerEnd: body.layerEnd, output, replayOutputs, ms: clock.now() - started, ...(cachedTokens !== undefined ? { cachedTokens } : {}) };
  });
  options.routes?.(app);
  const url = await listen(app, options.host ?? '127.0.0.1', options.port ?? 0);

  let stopped = false;
  let timer: unknown;
  let rejoining = false;
  const profile = { id: options.id, memoryGb: options.memoryGb, score: options.score, ...(options.slots !== undefined ? { slots: options.slots } : {}), url };

  const poster = createPeerPoster({ ...(options.auth !== undefined ? { signer: { secret: options.auth.secret, key: options.auth.key } } : {}), clock: options.auth?.clock ?? systemClock, ...(options.tls?.ca !== undefined ? { ca: options.tls.ca } : {}) });
  const post = (to: number, path: string, body: unknown, timeoutMs: number) => poster.post(`${bases[to]}${path}`, JSON.stringify(body), AbortSignal.timeout(timeoutMs));

  const join = async (): Promise<void> => {
    for (let attempt = 0; !stopped; attempt++) {
      const to = current;
      try {
        const response = await post(to, '/v1/nodes', profile, 5000);
        if (response.ok) {
          models = joinedModels(await response.json().catch(() => undefined));
          log(`joined ${bases[to]} as "${options.id}" (${url})`);
          return;
        }
        const text = await response.text();
        if (response.status >= 400 && response.status < 500) throw new Error(`the orchestrator refused the join: ${response.status} ${text}`);
        log(`join: ${response.status} ${text}; retrying`);
        // A replica cut off from its swarm's log answers 503: try another.
        failOver(to, 'join');
      } catch (error) {
        if (error instanceof Error && error.message.startsWith('the orchestrator refused')) throw error;
        if (!failOver(to, 'join') && (attempt === 0 || attempt % 20 === 0)) log(`join: ${bases[to]} unreachable (${describe(error)}); retrying`);
      }
      await sleep(250);
    }
  };

  // Heartbeats never wait for the previous one: after a stall (SIGSTOP, a long GC) the overdue
  // beat goes out at once, even if the one before is still being answered.
  // An orchestrator that cannot be reached is left for the next one at once, and the beat is sent
  // there right away (once: if every one is unreachable, the next beat is the next try).
  const beat = async (retry = false): Promise<void> => {
    if (stopped || rejoining || options.healthy?.() === false) return;
    const to = current;
    try {
      const response = await post(to, `/v1/nodes/${encodeURIComponent(options.id)}/heartbeat`, {}, heartbeatMs * 2);
      const replied = await response.text();
      // 503: it cannot serve (a replica cut off from its swarm's log): the next one, at once.
      if (response.status === 503 && failOver(to, 'heartbeat')) {
        if (!retry) void beat(true);
        return;
      }
      // 401, 409: not trusted (another swarm secret; the id bound to another key): say so, keep beating.
      if (response.status === 401 || response.status === 409) log(`heartbeat refused: ${response.status} ${replied.slice(0, 300)}`);
      // 404: the orchestrator does not know us (it restarted, or we left): join again.
      if (response.status === 404) {
        rejoining = true;
        await join().finally(() => {
          rejoining = false;
        });
      }
    } catch (error) {
      log(`heartbeat: ${describe(error)}`);
      if (failOver(to, 'heartbeat') && !retry) void beat(true);
    }
  };

  const joined = join().then(() => {
    if (stopped) return;
    void beat();
    // Every heartbeatMs, as an interval would: the next beat is scheduled before this one is sent.
    const every = (): void => {
      timer = clock.setTimeout(() => {
        if (stopped) return;
        every();
        void beat();
      }, heartbeatMs);
    };
    every();
  });
  joined.catch(() => {}); // observed by the caller; never an unhandled rejection

  return {
    id: options.id,
    url,
    joined,
    orchestrator: base,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      try {
        const response = await post(current, `/v1/nodes/${encodeURIComponent(options.id)}/leave`, {}, 2000);
        await response.arrayBuffer();
      } catch (error) {
        log(`leave: ${describe(error)}`);
      }
      await app.close();
      poster.close();
    },
  };
}

/** The models of a join's answer (`{ models: [{ id, layers }] }`), or undefined if it has none (an older orchestrator). */
function joinedModels(answer: unknown): Map<string, number> | undefined {
  const list = (answer as { models?: unknown } | null | undefined)?.models;
  if (!Array.isArray(list)) return undefined;
  const models = new Map<string, number>();
  for (const m of list as { id?: unknown; layers?: unknown }[]) if (typeof m?.id === 'string' && Number.isInteger(m.layers)) models.set(m.id, m.layers as number);
  return models.size > 0 ? models : undefined;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? error.message;
  }
  return String(error);
}
