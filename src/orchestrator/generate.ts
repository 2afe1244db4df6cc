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
import type { PeerPost } from '../net/peer-post.js';
import { asServeError } from './error-answers.js';
import { ServeError } from '../wire/serve-error.js';
import type { ServeMetrics } from './serve-metrics.js';
import type { GenerateProgress } from './idempotent-generate.js';
import type { GenerateReply, GenerateRequest } from './generate-protocol.js';
import { httpStageRunner, plainPost, type StageTiming } from './stage-client.js';
import { promptTokens } from '../core/prompt.js';
import { digestHex, promptDigest } from '../wire/digest.js';
import type { DigestStageReply } from './stage-call.js';
import { checkFitsDeadline, DEFAULT_WORK, nodeScore, type WorkModel } from './work-bounds.js';
import { verifiedRunner, type SpanChecks } from './verify-span.js';

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
  const tokens = Math.max(1, promptTokens(request.prompt));
  const path = new Map<number, DigestStageReply>();
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
