/**
 * `POST /v1/generate`: one session over the agents. The prompt's digest goes through every layer
 * `steps` times (each step's output is the next step's input); a stage call is one HTTP request
 * to the agent holding it; a failed call resumes from the failed stage (docs/sessions.md).
 */
import type { Swarm } from '../runtime/swarm.js';
import type { SessionHost, SessionOptions, StageRunner } from '../sessions/session-types.js';
import { openSession, swarmSessionHost } from '../sessions/session-swarm.js';
import type { Clock } from '../runtime/types.js';
import { countPrefix, reportingHost, type PrefixReport } from './prefix-report.js';
import type { NodeRegistry } from './node-registry.js';
import type { PeerPost } from './peer-post.js';
import { asServeError } from './error-answers.js';
import { ServeError } from './serve-error.js';
import type { ServeMetrics } from './serve-metrics.js';
import type { GenerateProgress } from './idempotent-generate.js';
import { digestHex, promptDigest, promptTokens } from './stage-work.js';
import type { StageReply, StageRequest } from './stage-protocol.js';
import { checkStageReply, readCapped } from './stage-reply.js';
import { checkFitsDeadline, DEFAULT_WORK, nodeScore, stageBudgetMs, type WorkModel } from './work-bounds.js';
import { verifiedRunner, type SpanChecks } from './verify-span.js';

/** `POST /v1/generate`'s body. */
export interface GenerateRequest {
  readonly model: string;
  readonly prompt: string;
  readonly steps: number;
  /** Makes the request idempotent (as the `Idempotency-Key` header): docs/serve.md, "Idempotent generation". */
  readonly idempotencyKey?: string;
}

/** The answer: the output digest and how it was made. */
export interface GenerateReply {
  readonly model: string;
  readonly steps: number;
  /** The last step's output: 8 hex digits. */
  readonly digest: string;
  readonly sessionId: string;
  /** Stage failures the session resumed from. */
  readonly resumes: number;
  /** The last step's stages: which agent ran which layers, in order. */
  readonly path: readonly { readonly nodeId: string; readonly layers: readonly [number, number] }[];
  readonly ms: number;
  /** Steps taken from an idempotency key's checkpoint (a resumed request), when any. */
  readonly resumedFrom?: number;
}

/** JSON schema of {@link GenerateRequest}. */
export const generateBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['model', 'prompt', 'steps'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 200 },
    prompt: { type: 'string', maxLength: 65_536 },
    steps: { type: 'integer', minimum: 1, maximum: 4096 },
    idempotencyKey: { type: 'string' }, // checked by idempotency-key.ts, naming the field
  },
} as const;

/** An unsigned POST over fetch (no swarm secret configured). */
const plainPost: PeerPost = (url, body, signal) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal, redirect: 'error' });
/** How a generation's stage calls are timed: the base timeout of a call, the work model, the clock. */
export interface StageTiming {
  /** A call's budget before its work is added (the `stageTimeoutMs` option). */
  readonly baseMs: number;
  readonly work: WorkModel;
  /** The orchestrator's clock: it times each call's budget. */
  readonly clock: Clock;
  /** A node's score now. */
  readonly score: (nodeId: string) => number;
}

/**
 * A stage runner that calls the agents over HTTP, counting calls in flight per agent. The agents
 * see session `id` as `sessionPrefix + id`: orchestrators of one replicated swarm draw the same
 * ids (their Swarms run on one seed), and an agent keeps caches per session id. Each call has a
 * budget that grows with its work (work-bounds.ts), follows no redirect, and its reply is read
 * capped and checked before its output goes on (stage-reply.ts): a call that fails any of them is
 * its own agent's failure. `post` sends the call (signed with the swarm secret, over the
 * configured TLS: peer-post.ts); plain fetch without.
 */
export function httpStageRunner(registry: NodeRegistry, metrics: ServeMetrics, promptTokenCount: number, path: Map<number, StageReply>, sessionPrefix = '', timing?: StageTiming, post: PeerPost = plainPost, prefix?: PrefixReport): StageRunner<number> {
  return async (stage, input, context) => {
    const record = registry.get(stage.nodeId);
    if (record?.url === undefined) throw new ServeError('StageFailed', 502, `agent "${stage.nodeId}" has no address (it never joined)`);
    const body: StageRequest = {
      sessionId: `${sessionPrefix}${stage.sessionId}`,
      modelId: stage.modelId,
      layerStart: stage.layerStart,
      layerEnd: stage.layerEnd,
      step: context.step,
      fresh: context.fresh,
      tokens: context.step === 0 ? promptTokenCount : 1,
      input,
      replay: context.replay,
      ...(prefix !== undefined && context.step === 0 ? { prompt: prefix.prompt } : {}),
    };
    record.inflight++;
    let outcome = 'error';
    const budget = new AbortController();
    let timer: unknown;
    let budgetMs = 0;
    if (timing !== undefined) {
      budgetMs = stageBudgetMs(timing.baseMs, timing.work, stage.layerEnd - stage.layerStart, body.tokens + body.replay.length, timing.score(stage.nodeId));
      timer = timing.clock.setTimeout(() => budget.abort(), budgetMs);
    }
    try {
      const signal = AbortSignal.any([context.signal, budget.signal]);
      const response = await post(`${record.url}/v1/stage`, JSON.stringify(body), signal);
      if (!response.ok) throw new ServeError('StageFailed', 502, `agent "${stage.nodeId}" answered ${response.status}: ${(await readCapped(response, stage.nodeId)).slice(0, 300)}`);
      const reply = checkStageReply(await readCapped(response, stage.nodeId), stage.nodeId, body);
      if (context.replay.length > 0) context.replayed(reply.replayOutputs);
      if (stage.stageIndex === 0) path.clear();
      if (prefix !== undefined && stage.stageIndex === 0 && context.step === 0 && reply.cachedTokens !== undefined) prefix.agentCached = reply.cachedTokens;
      path.set(stage.layerStart, reply);
      outcome = 'ok';
      return reply.output;
    } catch (error) {
      if (context.signal.aborted) outcome = 'aborted';
      else if (budget.signal.aborted) {
        outcome = 'timeout';
        throw new ServeError('StageFailed', 504, `agent "${stage.nodeId}" did not answer layers [${stage.layerStart}, ${stage.layerEnd}) × ${body.tokens + body.replay.length} tokens within their budget of ${Math.round(budgetMs)} ms`, { cause: error });
      }
      throw error;
    } finally {
      if (timer !== undefined) timing?.clock.clearTimeout(timer);
      record.inflight--;
      metrics.stageCalls.inc({ node: stage.nodeId, outcome });
    }
  };
}

/**
 * Runs one generation. Library errors become {@link ServeError}s with the status to answer, from
 * the one table of `error-answers.ts`: an unknown model 400 (field `model`), nothing to serve with
 * 503, a failed session 502, 503 or 504.
 * `clock` times the reply's `ms` (the orchestrator's clock, the one its Swarm runs on);
 * `sessionPrefix` goes before the session's id wherever it leaves the orchestrator; `post` sends
 * the stage calls. With `progress` (an idempotency key: idempotent-generate.ts) it starts after the
 * steps whose inputs it carries, reports each step, and stops when its signal aborts; `checks`,
 * when given, verifies a share of the stage calls on other copies (verify-span.ts); `host`, when
 * given, is the session's (an admitted route's: admitted-host.ts).
 */
export async function generate(swarm: Swarm, registry: NodeRegistry, metrics: ServeMetrics, request: GenerateRequest, options: SessionOptions, clock: Clock, sessionPrefix = '', work: WorkModel = DEFAULT_WORK, post: PeerPost = plainPost, progress?: GenerateProgress, checks?: SpanChecks, host?: SessionHost): Promise<GenerateReply> {
  const started = clock.now();
  const tokens = promptTokens(request.prompt);
  const path = new Map<number, StageReply>();
  const prefix: PrefixReport = { prompt: request.prompt, agentCached: undefined };
  const deadlineMs = options.deadlineMs ?? Number.POSITIVE_INFINITY;
  // Refused up front what cannot finish in time: never sent to be timed out (docs/serve.md, "Limits").
  const from = progress === undefined ? 0 : progress.inputs.length - 1;
  checkFitsDeadline(swarm.state(), work, request.model, tokens, request.steps - from, deadlineMs);
  const timing: StageTiming = { baseMs: options.stageTimeoutMs ?? 30_000, work, clock, score: (nodeId) => nodeScore(swarm.state(), nodeId) };
  // Each call's budget is the runner's (it grows with the call's work); the session's own fixed
  // timeout is only the deadline's backstop.
  const sessionOptions: SessionOptions = { ...options, stageTimeoutMs: Number.isFinite(deadlineMs) ? deadlineMs : 600_000, replayTimeoutMsPerInput: 0, ...(progress !== undefined ? { signal: progress.signal } : {}) };
  let session;
  try {
    // A check call's session (`<id>~v<n>`) is one call long: its node is told to drop it at once.
    const checkRunner = (): StageRunner<number> => {
      const run = httpStageRunner(registry, metrics, tokens, new Map(), sessionPrefix, timing, post);
      return (stage, input, context) => Promise.resolve(run(stage, input, context)).finally(() => options.dropSession?.(stage.nodeId, stage.sessionId));
    };
    const runner = verifiedRunner(swarm, httpStageRunner(registry, metrics, tokens, path, sessionPrefix, timing, post, prefix), checkRunner, checks);
    session = openSession<number>(reportingHost(host ?? swarmSessionHost(swarm), prefix), { model: request.model, tokens: tokens + request.steps, prompt: request.prompt }, runner, sessionOptions);
  } catch (error) {
    throw asServeError(error); // e.g. no route 503, a model only a degraded route serves 503
  }
  try {
    if (from > 0) session.restore(progress?.inputs.slice(0, from) ?? []); // the new stages replay them
    let x = progress?.inputs[from] ?? promptDigest(request.prompt);
    for (let t = from; t < request.steps; t++) {
      x = await session.step(x);
      metrics.steps.inc();
      await progress?.afterStep(t + 1, x);
    }
    countPrefix(metrics, tokens, session.route.cachedTokens, prefix);
    const stats = session.stats();
    return {
      model: request.model,
      steps: request.steps,
      digest: digestHex(x),
      sessionId: `${sessionPrefix}${session.id}`,
      resumes: stats.resumes,
      path: [...path.values()].sort((a, b) => a.layerStart - b.layerStart).map((r) => ({ nodeId: r.nodeId, layers: [r.layerStart, r.layerEnd] as const })),
      ms: clock.now() - started,
      ...(from > 0 ? { resumedFrom: from } : {}),
    };
  } catch (error) {
    throw asServeError(error);
  } finally {
    metrics.resumes.inc(session.stats().resumes);
    session.close();
  }
}
