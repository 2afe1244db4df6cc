/**
 * The stage runner of a token generation (completion-run.ts): each stage call one binary stage
 * message of typed tensors to the agent holding the stage (stage-call.ts) — token ids into the
 * first stage, activations between stages, the last token's logits out (docs/engine.md) — with
 * its count of calls in flight and its metric. Replayed inputs go with a fresh call; their
 * outputs come back to the session for a replacement downstream.
 */
import type { SessionStage, StageRunner } from '../sessions/session-types.js';
import type { StageReply } from '../wire/stage-protocol.js';
import type { Tensor } from '../wire/tensor.js';
import { beginCall, plainPost, type StageCalls } from './stage-client.js';
import { callStage } from './stage-call.js';

/** Options of {@link tensorStageRunner}: one generation's. */
export interface TensorRunnerOptions {
  readonly calls: StageCalls;
  /** Goes before the session's id wherever it leaves the orchestrator. @defaultValue '' */
  readonly sessionNamespace?: string;
  /** A call's budget in ms, replay included (the session's timeout is the backstop). @defaultValue none */
  readonly callTimeoutMs?: number;
  /** Told every answered call, with its step and the bytes of its replay. */
  readonly answered?: (stage: SessionStage, step: number, reply: StageReply, replayBytes: number) => void;
}

/** Tokens a stage input stands for: its leading dimension (ids `[tokens]`, activations `[tokens, hidden]`). */
export function tokensOf(input: Tensor): number {
  return Math.max(1, input.shape[0] ?? 1);
}

/** A stage runner over the binary wire, for tensors. */
export function tensorStageRunner(options: TensorRunnerOptions): StageRunner<Tensor> {
  const { calls, answered } = options;
  const namespace = options.sessionNamespace ?? '';
  const post = calls.post ?? plainPost;
  return async (stage, input, context) => {
    const call = beginCall(calls, stage.nodeId);
    let outcome = 'error';
    const signals = [context.signal];
    if (options.callTimeoutMs !== undefined) signals.push(AbortSignal.timeout(options.callTimeoutMs * (1 + context.replay.length / 16)));
    try {
      const reply = await callStage(post, call.url, stage.nodeId, {
        sessionId: `${namespace}${stage.sessionId}`,
        modelId: stage.modelId,
        layerStart: stage.layerStart,
        layerEnd: stage.layerEnd,
        step: context.step,
        fresh: context.fresh,
        tokens: tokensOf(input),
        input,
        replay: context.replay,
      }, AbortSignal.any(signals));
      if (context.replay.length > 0) context.replayed(reply.replayOutputs);
      let replayBytes = 0;
      for (const r of context.replay) replayBytes += r.data.byteLength;
      answered?.(stage, context.step, reply, replayBytes);
      outcome = 'ok';
      return reply.output;
    } finally {
      call.end(outcome);
    }
  };
}
