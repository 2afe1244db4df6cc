/**
 * The stage runner of a token generation (completion-run.ts): each stage call one binary stage
 * message of typed tensors to the agent holding the stage (stage-call.ts) — token ids into the
 * first stage, activations between stages, the last token's logits out (docs/engine.md) — with
 * its count of calls in flight, its metric and its budget. Replayed inputs go with a fresh call;
 * their outputs come back to the session for a replacement downstream.
 */
import type { Clock } from '../runtime/types.js';
import type { SessionStage, StageRunner } from '../sessions/session-types.js';
import type { StageReply } from '../wire/stage-protocol.js';
import { ServeError } from '../wire/serve-error.js';
import type { Tensor } from '../wire/tensor.js';
import { beginCall, plainPost, stageCallHead, type StageCalls } from './stage-client.js';
import { callStage } from './stage-call.js';
import { NodeBusyError } from '../sessions/node-busy.js';
import { StateLostError } from '../sessions/state-lost.js';

/** Options of {@link tensorStageRunner}: one generation's. */
export interface TensorRunnerOptions {
  readonly calls: StageCalls;
  /** Goes before the session's id wherever it leaves the orchestrator. @defaultValue '' */
  readonly sessionNamespace?: string;
  /**
   * A call's budget: `baseMs`, plus a sixteenth of it per replayed input, timed on `clock` (the
   * engine's time is not modelled; the session's timeout is the backstop). @defaultValue none
   */
  readonly timing?: { readonly baseMs: number; readonly clock: Clock };
  /** Told every answered call, with its step and the bytes of its replay. */
  readonly answered?: (stage: SessionStage, step: number, reply: StageReply, replayBytes: number) => void;
}

/** Tokens a stage input stands for: its leading dimension (ids `[tokens]`, activations `[tokens, hidden]`). */
export function tokensOf(input: Tensor): number {
  return Math.max(1, input.shape[0] ?? 1);
}

/** Whether two tensors are the same: dtype, shape and bytes (a verification's check). */
export function sameTensor(a: Tensor, b: Tensor): boolean {
  if (a.dtype !== b.dtype || a.shape.length !== b.shape.length || a.shape.some((n, i) => n !== b.shape[i])) return false;
  return Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength).equals(Buffer.from(b.data.buffer, b.data.byteOffset, b.data.byteLength));
}

/** A stage runner over the binary wire, for tensors. */
export function tensorStageRunner(options: TensorRunnerOptions): StageRunner<Tensor> {
  const { calls, answered, timing } = options;
  const namespace = options.sessionNamespace ?? '';
  const post = calls.post ?? plainPost;
  return async (stage, input, context) => {
    const call = beginCall(calls, stage.nodeId);
    let outcome = 'error';
    let failure: unknown;
    const budget = new AbortController();
    const budgetMs = timing === undefined ? 0 : timing.baseMs * (1 + context.replay.length / 16);
    const timer = timing?.clock.setTimeout(() => budget.abort(), budgetMs);
    try {
      const reply = await callStage(post, call.url, stage.nodeId, {
        ...stageCallHead(stage, context, namespace),
        tokens: tokensOf(input),
        input,
        replay: context.replay,
      }, AbortSignal.any([context.signal, budget.signal]));
      if (context.replay.length > 0) context.replayed(reply.replayOutputs);
      let replayBytes = 0;
      for (const r of context.replay) replayBytes += r.data.byteLength;
      answered?.(stage, context.step, reply, replayBytes);
      outcome = 'ok';
      return reply.output;
    } catch (error) {
      failure = error;
      if (context.signal.aborted) outcome = 'aborted';
      else if (error instanceof NodeBusyError) outcome = 'busy';
      else if (error instanceof StateLostError) outcome = 'lost';
      else if (budget.signal.aborted) {
        outcome = 'timeout';
        throw new ServeError('StageFailed', 504, `agent "${stage.nodeId}" did not answer layers [${stage.layerStart}, ${stage.layerEnd}) × ${tokensOf(input)} tokens and ${context.replay.length} replayed inputs within their budget of ${Math.round(budgetMs)} ms`, { cause: error });
      }
      throw error;
    } finally {
      if (timer !== undefined) timing?.clock.clearTimeout(timer);
      call.end(outcome, failure);
    }
  };
}
