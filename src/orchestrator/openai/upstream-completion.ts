/**
 * One OpenAI completion over the swarm's upstream copies (docs/openai.md, "Failover"): admitted
 * through the swarm's admission (priority, deadline), forwarded to the one agent of the leased
 * copy, its engine's stream read piece by piece. A call that fails before its first piece is
 * retried on another copy after a backoff; a stream that breaks midway is continued on another
 * copy from what was generated so far (its token ids where the engine streamed them, else its
 * text), for the tokens `max_tokens` leaves. Never the same engine twice in one request, and at
 * most `retries` failures.
 */
import { agentAudience } from '../../wire/request-signing.js';
import { resumeRoute } from '../../core/resume.js';
import type { Route } from '../../core/types.js';
import type { Swarm } from '../../runtime/swarm.js';
import type { Clock, LeasedRoute, SwarmRequest } from '../../runtime/types.js';
import { swarmSessionHost } from '../../sessions/session-swarm.js';
import type { PeerPost, PeerReply, PeerStream } from '../../net/peer-post.js';
import type { PeerStreamReply } from '../../net/peer-stream.js';
import { ServeError } from '../../wire/serve-error.js';
import type { NodeRegistry } from '../node-registry.js';
import { continuationBody, type EngineUsage, type StreamedIds } from './engine-body.js';
import type { CompletionJob } from '../../wire/openai-request.js';
import { readSse } from './sse-reader.js';
import { StreamText } from './stream-text.js';
import { NodeBusyError } from '../../sessions/node-busy.js';

/** What one completion runs with. */
export interface CompletionContext {
  readonly swarm: Swarm;
  readonly registry: NodeRegistry;
  readonly clock: Clock;
  readonly post: PeerPost;
  /** Forwards a completion, its answer read as it arrives (peer-stream.ts); without it, {@link CompletionContext.post}. */
  readonly stream?: PeerStream;
  /** The prompt the prefix index keys on: the completion's prompt, or the whole conversation. */
  readonly affinity: string | readonly number[];
  readonly priority: number;
  readonly deadlineMs: number | undefined;
  /** The client hung up, or the deadline passed. */
  readonly signal: AbortSignal;
  /** @defaultValue 3 */
  readonly retries?: number;
  /** The first retry's wait; each next one doubles it. @defaultValue 25 */
  readonly backoffMs?: number;
  /** How long an agent may take to start answering. @defaultValue 30000 */
  readonly firstByteMs?: number;
}

/** How a completion ended. */
export interface CompletionOutcome {
  readonly finish: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  /** The agents that streamed it, in order (more than one after a failover). */
  readonly nodes: readonly string[];
}

/** An engine's failure: retried on another copy (a 4xx of the request itself is not). */
class EngineFailed extends Error {}

/** Runs `job`, handing each piece of text to `emit` as it may go to the client. */
export async function runCompletion(ctx: CompletionContext, job: CompletionJob, emit: (text: string) => void): Promise<CompletionOutcome> {
  const { swarm, registry, clock } = ctx;
  const host = swarmSessionHost(swarm);
  const retries = ctx.retries ?? 3;
  const text = new StreamText(job.stop);
  const tried = new Set<string>();
  const nodes: string[] = [];
  let route: Route | undefined;
  let failures = 0;
  let completionTokens = 0;
  /** Tokens streamed: each piece's ids where the engine sent them, else one a piece. */
  let tokens = 0;
  /** The ids the engines streamed, while every piece came with its own. */
  let ids: { prompt: number[] | undefined; generated: number[] } | undefined = { prompt: undefined, generated: [] };
  let usage: EngineUsage | undefined;
  let finish = 'length';
  const admitOptions = { priority: ctx.priority, signal: ctx.signal, ...(ctx.deadlineMs !== undefined && Number.isFinite(ctx.deadlineMs) ? { deadlineMs: ctx.deadlineMs } : {}) };
  for (;;) {
    const remaining = job.maxTokens - tokens;
    if (remaining <= 0) break; // every token max_tokens allows was streamed before the engine died
    const streamed: StreamedIds | undefined = ids?.prompt === undefined ? undefined : { prompt: ids.prompt, generated: ids.generated };
    const segment = continuationBody(job, text.generated(), remaining, streamed);
    if (segment === undefined) throw new ServeError('SessionFailed', 502, `the engine of "${nodes.at(-1)}" died mid-answer and a token-id prompt is continued only on engines that stream token ids (docs/openai.md, "Failover")`);
    const request: SwarmRequest = { model: job.model, prompt: ctx.affinity, tokens: Math.max(1, typeof ctx.affinity === 'string' ? Math.ceil(ctx.affinity.length / 4) : ctx.affinity.length) + remaining };
    const leased: LeasedRoute = route === undefined ? await swarm.admit(request, admitOptions) : await admitElsewhere(host, route, tried, request, admitOptions, swarm);
    route = leased;
    const stage = leased.stages[0];
    const record = stage === undefined ? undefined : registry.get(stage.nodeId);
    if (stage === undefined || leased.stages.length !== 1 || record?.url === undefined) {
      release(swarm, leased, { neutral: true }); // no node was called
      throw new ServeError('NoRoute', 503, `model "${job.model}": the copy chosen (${leased.stages.map((s) => s.nodeId).join(', ')}) is not one upstream agent holding every layer (docs/openai.md)`);
    }
    const node = stage.nodeId;
    const started = clock.now();
    const before = tokens;
    // The attempt's own signal, aborted with the request's (a listener: AbortSignal.any costs more, per request).
    const attempt = new AbortController();
    const follow = (): void => attempt.abort(ctx.signal.reason);
    if (ctx.signal.aborted) follow();
    else ctx.signal.addEventListener('abort', follow, { once: true });
    const firstByte = clock.setTimeout(() => attempt.abort(new EngineFailed(`agent "${node}" did not start answering within ${ctx.firstByteMs ?? 30_000} ms`)), ctx.firstByteMs ?? 30_000);
    record.inflight++;
    let segmentUsage: EngineUsage | undefined;
    let segmentFinish: string | undefined;
    try {
      const url = `${record.url}${segment.chat ? '/v1/upstream/chat/completions' : '/v1/upstream/completions'}`;
      const reply: PeerReply | PeerStreamReply = ctx.stream !== undefined ? await ctx.stream(url, JSON.stringify(segment.body), attempt.signal, agentAudience(node)) : await ctx.post(url, JSON.stringify(segment.body), attempt.signal, 'POST', 'application/json', agentAudience(node));
      clock.clearTimeout(firstByte);
      if (!reply.ok) {
        // At most ERROR_BODY_BYTES of it read (a failing engine's body may be anything), 500 characters of it told.
        const whole = await errorText(reply);
        const said = whole.slice(0, 500);
        if (reply.status >= 400 && reply.status < 500 && reply.status !== 408 && reply.status !== 429) throw new ServeError('InvalidRequest', 400, `the engine refused the request: ${reply.status} ${said}`);
        // At capacity (the engine's 429, the agent's 503 Full): tried elsewhere, charged nothing (docs/sessions.md, "A busy node").
        if (reply.status === 429 || (reply.status === 503 && /"code"\s*:\s*"Full"/.test(whole))) throw new NodeBusyError(node, `agent "${node}" answered ${reply.status} ${said}`);
        throw new EngineFailed(`agent "${node}" answered ${reply.status} ${said}`);
      }
      const load = Number(reply.headers?.get('x-hecate-load'));
      if (Number.isFinite(load)) reportLoad(swarm, node, Math.min(1, Math.max(0, load)), clock.now());
      const body = 'read' in reply ? reply : (reply.chunks ?? reply.body);
      if (body === undefined || body === null) throw new EngineFailed(`agent "${node}" answered without a body`);
      nodes.push(node);
      // Each event as it arrives, in the turn its bytes do (sse-reader.ts): no promise per token.
      const end = await readSse(body, (data) => {
        const chunk = JSON.parse(data) as { choices?: { text?: string; delta?: { content?: string | null }; finish_reason?: string | null; token_ids?: unknown; prompt_token_ids?: unknown }[]; usage?: EngineUsage };
        const choice = chunk.choices?.[0];
        const piece = choice?.text ?? choice?.delta?.content ?? '';
        const pieceIds = isIds(choice?.token_ids) ? choice.token_ids : undefined;
        if (ids !== undefined && before === 0 && ids.prompt === undefined && isIds(choice?.prompt_token_ids)) ids.prompt = [...choice.prompt_token_ids];
        if (pieceIds !== undefined) ids?.generated.push(...pieceIds);
        else if (piece !== '') ids = undefined; // a piece without its ids: continued from the text
        tokens += pieceIds?.length ?? (piece !== '' && !text.stopped() ? 1 : 0);
        if (piece !== '') {
          const go = text.push(piece);
          if (go !== '') emit(go);
          if (text.stopped()) return false;
        }
        if (typeof choice?.finish_reason === 'string') segmentFinish = choice.finish_reason;
        if (chunk.usage != null) segmentUsage = chunk.usage;
        return true;
      });
      // Cut short here by a stop string: the engine's request is ended (its body was destroyed too).
      // Whole (its [DONE]): its body is read to its end, the connection kept for the next request.
      if (end === 'stopped') attempt.abort(new Error('answered'));
      completionTokens += segmentUsage?.completion_tokens ?? tokens - before;
      usage ??= segmentUsage === undefined ? undefined : { ...segmentUsage, prompt_tokens: segmentUsage.prompt_tokens - before };
      finish = text.stopped() ? 'stop' : (segmentFinish ?? 'stop');
      release(swarm, leased, { latencyMs: clock.now() - started, ...(segmentUsage?.prompt_tokens_details?.cached_tokens !== undefined && before === 0 ? { cachedTokens: segmentUsage.prompt_tokens_details.cached_tokens } : {}) });
      break;
    } catch (error) {
      clock.clearTimeout(firstByte);
      attempt.abort(error);
      completionTokens += tokens - before;
      if (ctx.signal.aborted) {
        release(swarm, leased, { neutral: true }); // the client left: it says nothing of the agent
        throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new ServeError('NoRoute', 503, 'the client went away');
      }
      if (error instanceof ServeError) {
        release(swarm, leased, {});
        throw error;
      }
      release(swarm, leased, error instanceof NodeBusyError ? { busyNode: node } : { ok: false, failedNode: node });
      tried.add(node);
      failures++;
      if (failures > retries) throw new ServeError('SessionFailed', 502, `model "${job.model}": ${failures} engines failed this request (${[...tried].join(', ')}); the last: ${(error as Error).message}`, { cause: error });
      // Before any text, wait a little (the swarm learns of the failure); midway, the client is waiting: continue at once.
      if (tokens === 0) await sleep(clock, (ctx.backoffMs ?? 25) * 2 ** (failures - 1), ctx.signal);
    } finally {
      ctx.signal.removeEventListener('abort', follow);
      record.inflight--;
    }
  }
  const tail = text.flush();
  if (tail !== '') emit(tail);
  const promptTokens = usage?.prompt_tokens ?? (typeof ctx.affinity === 'string' ? Math.ceil(ctx.affinity.length / 4) : ctx.affinity.length);
  return { finish, promptTokens: Math.max(0, promptTokens), completionTokens, cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0, nodes };
}

/** How much of an agent's error answer is read: its error object, with room to spare. */
const ERROR_BODY_BYTES = 64 * 1024;

/** An error answer's text, at most {@link ERROR_BODY_BYTES} of it (why not, when it cannot be read). */
async function errorText(reply: PeerReply | PeerStreamReply): Promise<string> {
  try {
    if ('read' in reply) return await reply.text(ERROR_BODY_BYTES);
    if (reply.bytes !== undefined) return Buffer.from(await reply.bytes(ERROR_BODY_BYTES)).toString('utf8');
    return (await reply.text()).slice(0, ERROR_BODY_BYTES);
  } catch {
    return `(its body was not read: over ${ERROR_BODY_BYTES / 1024} KB, or cut)`; // the reason would name the agent's address
  }
}

/** An array of token ids. */
function isIds(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((v) => Number.isInteger(v) && v >= 0);
}

/** A lease on another copy than those `tried`: the failed route re-served by a live copy (core's resumeRoute), admitted ahead of new work. */
async function admitElsewhere(host: ReturnType<typeof swarmSessionHost>, failed: Route, tried: ReadonlySet<string>, request: SwarmRequest, options: { priority: number; signal: AbortSignal; deadlineMs?: number }, swarm: Swarm): Promise<LeasedRoute> {
  let next: Route;
  try {
    next = resumeRoute(failed, 0, swarm.state(), { request, dead: [...tried] }).route;
  } catch (error) {
    throw new ServeError('NoRoute', 503, `model "${failed.modelId}": no copy left but the ones that failed this request (${[...tried].join(', ')})`, { cause: error });
  }
  if (host.admit === undefined) return host.reserve(next, request);
  return host.admit(request, { ...options, resumed: true }, next);
}

function release(swarm: Swarm, leased: LeasedRoute, outcome: Parameters<Swarm['release']>[1]): void {
  try {
    swarm.release(leased.lease, outcome);
  } catch {
    // expired, or the swarm was replaced: nothing left to release
  }
}

/** How often a node's load is fed to the swarm at most: it changes once an agent's probe (a second), answers come far more often. */
const LOAD_EVERY_MS = 100;
/** When each node's load was last fed to each swarm. */
const loadFed = new WeakMap<Swarm, Map<string, number>>();

/** Feeds `node`'s load to the swarm's telemetry, unless it was fed within {@link LOAD_EVERY_MS}. */
function reportLoad(swarm: Swarm, node: string, load: number, now: number): void {
  let fed = loadFed.get(swarm);
  if (fed === undefined) loadFed.set(swarm, (fed = new Map()));
  const last = fed.get(node);
  if (last !== undefined && now - last >= 0 && now - last < LOAD_EVERY_MS) return;
  if (fed.size >= 4096) fed.clear(); // nodes come and go: the table forgets rather than grows
  fed.set(node, now);
  try {
    swarm.report(node, { load });
  } catch {
    // a node the swarm no longer has
  }
}

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      signal.removeEventListener('abort', stop);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    const stop = (): void => {
      clock.clearTimeout(timer);
      reject(signal.reason);
    };
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
}
