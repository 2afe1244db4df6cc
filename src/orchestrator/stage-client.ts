/**
 * The session's stage runner on the orchestrator: each stage call one HTTP request to the agent
 * holding the stage (stage-call.ts), with its budget, its count of calls in flight and its metric
 * (docs/engine.md). What a call's answer means for the generation (its path, the agent's cache
 * report) is the generation's: the runner hands each answer to `answered`.
 */
import type { SessionStage, StageContext, StageRunner } from '../sessions/session-types.js';
import type { Clock } from '../runtime/types.js';
import type { NodeRegistry } from './node-registry.js';
import { plainPost, type PeerPost } from '../net/peer-post.js';
import { ServeError } from '../wire/serve-error.js';
import type { ServeMetrics } from './serve-metrics.js';
import { callDigestStage, type DigestStageReply, type DigestStageRequest } from './stage-call.js';
import { stageBudgetMs, type WorkModel } from './work-bounds.js';
import type { CallOutcomes, CallVerdict } from './member-bench.js';
import { NodeBusyError } from '../sessions/node-busy.js';
import { StateLostError } from '../sessions/state-lost.js';

export { plainPost };

/** What every stage call of one orchestrator goes through: the agents' addresses, the metrics, the poster. */
export interface StageCalls {
  /** Read only through `get(id)?.url` and `inflight`. */
  readonly registry: NodeRegistry;
  readonly metrics: ServeMetrics;
  /** Sends a call (signed with the swarm secret, over the configured TLS: peer-post.ts). @defaultValue {@link plainPost} */
  readonly post?: PeerPost;
  /** Told whether each call's agent answered (member-bench.ts). */
  readonly outcomes?: CallOutcomes;
}

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

/** Options of {@link httpStageRunner}: one generation's. */
export interface StageRunnerOptions {
  readonly calls: StageCalls;
  /** Without it a call has no budget of its own (only the session's timeout). */
  readonly timing?: StageTiming;
  /** Goes before the session's id wherever it leaves the orchestrator. @defaultValue '' */
  readonly sessionNamespace?: string;
  /** The prompt's tokens: the first step's work. */
  readonly promptTokens: number;
  /** Sent with the first step's calls, for the agents' prompt-prefix cache. */
  readonly prompt?: string;
  /** Told every answered call, with its step. */
  readonly answered?: (stage: SessionStage, step: number, reply: DigestStageReply) => void;
}

/**
 * A stage runner that calls the agents over HTTP, counting calls in flight per agent. The agents
 * see session `id` as `sessionNamespace + id`: orchestrators of one replicated swarm draw the same
 * ids (their Swarms run on one seed), and an agent keeps caches per session id. Each call has a
 * budget that grows with its work (work-bounds.ts), and its reply is read capped and checked
 * before its output goes on (stage-call.ts): a call that fails any of them is its own agent's failure.
 */
export function httpStageRunner(options: StageRunnerOptions): StageRunner<number> {
  const { calls, timing, promptTokens, prompt, answered } = options;
  const namespace = options.sessionNamespace ?? '';
  const post = calls.post ?? plainPost;
  return async (stage, input, context) => {
    const call = beginCall(calls, stage.nodeId);
    const body: DigestStageRequest = {
      ...stageCallHead(stage, context, namespace),
      tokens: context.step === 0 ? promptTokens : 1,
      input,
      replay: context.replay,
      ...(prompt !== undefined && context.step === 0 ? { prompt } : {}),
    };
    let outcome = 'error';
    let failure: unknown;
    const budget = new AbortController();
    let timer: unknown;
    let budgetMs = 0;
    if (timing !== undefined) {
      budgetMs = stageBudgetMs(timing.baseMs, timing.work, { layers: stage.layerEnd - stage.layerStart, tokens: body.tokens + body.replay.length, score: timing.score(stage.nodeId) });
      timer = timing.clock.setTimeout(() => budget.abort(), budgetMs);
    }
    try {
      const signal = AbortSignal.any([context.signal, budget.signal]);
      const reply = await callDigestStage(post, call.url, stage.nodeId, body, signal);
      if (context.replay.length > 0) context.replayed(reply.replayOutputs);
      answered?.(stage, context.step, reply);
      outcome = 'ok';
      return reply.output;
    } catch (error) {
      failure = error;
      if (context.signal.aborted) outcome = 'aborted';
      else if (error instanceof NodeBusyError) outcome = 'busy';
      else if (error instanceof StateLostError) outcome = 'lost';
      else if (budget.signal.aborted) {
        outcome = 'timeout';
        throw new ServeError('StageFailed', 504, `agent "${stage.nodeId}" did not answer layers [${stage.layerStart}, ${stage.layerEnd}) × ${body.tokens + body.replay.length} tokens within their budget of ${Math.round(budgetMs)} ms`, { cause: error });
      }
      throw error;
    } finally {
      if (timer !== undefined) timing?.clock.clearTimeout(timer);
      call.end(outcome, failure);
    }
  };
}

/**
 * Begins one stage call to `nodeId` for any runner: the agent's address, the call counted in flight
 * (what routing sees at once); `end(outcome, error)` uncounts it, counts its outcome in `/metrics`
 * and tells `calls.outcomes` whether the agent answered.
 * @throws {ServeError} `StageFailed` 502 when the agent has no address
 */
export function beginCall(calls: StageCalls, nodeId: string): { readonly url: string; end(outcome: string, error?: unknown): void } {
  const record = calls.registry.get(nodeId);
  if (record?.url === undefined) throw new ServeError('StageFailed', 502, `agent "${nodeId}" has no address (it never joined)`);
  record.inflight++;
  return {
    url: record.url,
    end(outcome, error) {
      record.inflight--;
      calls.metrics.countStageCall(nodeId, outcome);
      calls.outcomes?.called(nodeId, verdictOf(outcome, error));
    },
  };
}

/**
 * Whether a call's agent answered: `ok` is an answer; a call past its budget, or one that got no
 * HTTP reply at all (refused, reset: not a {@link ServeError}, which is a reply read and refused),
 * is not; an aborted call, a busy one (503 `Full`: no useful answer, but no silence either), one
 * that lost its state (409 `UnknownSession`) or an answered error says nothing of it here.
 */
export function verdictOf(outcome: string, error?: unknown): CallVerdict {
  if (outcome === 'ok') return 'answered';
  if (outcome === 'timeout' || (outcome === 'error' && error !== undefined && !(error instanceof ServeError) && !(error instanceof NodeBusyError) && !(error instanceof StateLostError))) return 'unanswered';
  return 'other';
}

/**
 * What every stage call of `stage` at this step says about itself, whatever it carries: its session
 * (as `sessionNamespace + id`), its span, its step and whether the agent must start it afresh.
 */
export function stageCallHead(stage: SessionStage, context: Pick<StageContext<unknown>, 'step' | 'fresh'>, namespace: string) {
  return { sessionId: `${namespace}${stage.sessionId}`, modelId: stage.modelId, layerStart: stage.layerStart, layerEnd: stage.layerEnd, step: context.step, fresh: context.fresh };
}
