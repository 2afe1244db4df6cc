/**
 * The orchestrator's side of a stage call: one HTTP request to the agent holding the stage, with
 * its budget, its capped and checked reply, and its count of calls in flight (docs/engine.md).
 */
import type { StageRunner } from '../sessions/session-types.js';
import type { Clock } from '../runtime/types.js';
import type { PrefixReport } from './prefix-report.js';
import type { NodeRegistry } from './node-registry.js';
import { plainPost, type PeerPost } from '../net/peer-post.js';
import { ServeError } from '../wire/serve-error.js';
import type { ServeMetrics } from './serve-metrics.js';
import { callDigestStage, type DigestStageReply, type DigestStageRequest } from './stage-call.js';
import { stageBudgetMs, type WorkModel } from './work-bounds.js';

export { plainPost };
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
export function httpStageRunner(registry: NodeRegistry, metrics: ServeMetrics, promptTokenCount: number, path: Map<number, DigestStageReply>, sessionPrefix = '', timing?: StageTiming, post: PeerPost = plainPost, prefix?: PrefixReport): StageRunner<number> {
  return async (stage, input, context) => {
    const record = registry.get(stage.nodeId);
    if (record?.url === undefined) throw new ServeError('StageFailed', 502, `agent "${stage.nodeId}" has no address (it never joined)`);
    const body: DigestStageRequest = {
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
      const reply = await callDigestStage(post, record.url, stage.nodeId, body, signal);
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
