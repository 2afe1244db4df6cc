/**
 * One token generation of `POST /v1/completions` (completions-route.ts): the prompt's token ids
 * into the first stage, each step's last-stage logits sampled into the next token
 * (src/model/sampler.ts: greedy at temperature 0, else drawn by (seed, step), so a resumed
 * generation draws what the unbroken one would), until `maxTokens`, the end-of-sequence token or
 * a stop string. Its session resumes a failed stage from the failed span: the replacement's KV
 * cache is rebuilt by replaying the boundary activations the session kept (docs/completions.md).
 */
import { SessionError } from '../core/errors.js';
import type { Swarm } from '../runtime/swarm.js';
import { openSession, swarmSessionHost } from '../sessions/session-swarm.js';
import type { SessionOptions } from '../sessions/session-types.js';
import { sampleToken, type SamplingOptions } from '../model/sampler.js';
import type { ModelTokenizer } from '../model/tokenizer.js';
import type { Tensor } from '../wire/tensor.js';
import { tokenTensor } from '../wire/tensor.js';
import { asServeError } from './error-answers.js';
import type { StageCalls } from './stage-client.js';
import { tensorStageRunner } from './tensor-stage-runner.js';
import { StopText } from '../model/stop-text.js';
import type { HistoryHolder } from './completion-metrics.js';

/** What a completion needs of its model: its id, tokenizer and vocabulary size. */
export interface TextModel {
  readonly id: string;
  readonly tokenizer: ModelTokenizer;
  readonly vocab: number;
}

/** Options of {@link runCompletion}. */
export interface CompletionRunOptions {
  readonly swarm: Swarm;
  readonly calls: StageCalls;
  readonly model: TextModel;
  /** The prompt's token ids (at least one). */
  readonly promptIds: readonly number[];
  readonly maxTokens: number;
  readonly sampling: SamplingOptions;
  /** Text that ends the completion (not included). */
  readonly stop: readonly string[];
  readonly session: SessionOptions;
  readonly sessionNamespace?: string;
  /** A call's budget in ms. */
  readonly callTimeoutMs?: number;
  /**
   * Bytes of boundary activations its session keeps for replay; past it they are dropped and a
   * failure recomputes from the token ids. @defaultValue {@link DEFAULT_MAX_HISTORY_BYTES}
   */
  readonly maxHistoryBytes?: number;
  /** Its session is in this set while it runs (the metrics read its history's bytes). */
  readonly live?: Set<HistoryHolder>;
  /** Told each piece of text as it becomes final (streaming). */
  readonly onText?: (delta: string, tokenId: number) => void;
}

/** A completion's default bound on its history of boundary activations: 64 MiB. */
export const DEFAULT_MAX_HISTORY_BYTES = 64 * 1024 * 1024;

/** Why a completion ended: OpenAI's `finish_reason`. */
export type FinishReason = 'stop' | 'length';

/** A finished completion. */
export interface CompletionResult {
  readonly text: string;
  /** Every token generated, the end-of-sequence token included when it ended the completion. */
  readonly tokenIds: readonly number[];
  readonly finishReason: FinishReason;
  /** The last step's logits (the last stage's f32 output). */
  readonly lastLogits: Float32Array;
  readonly sessionId: string;
  readonly resumes: number;
  /** Inputs replayed to rebuild replacements' caches, and their bytes. */
  readonly replayedInputs: number;
  readonly replayedBytes: number;
  /** Which agent ran which layers, as the last step went. */
  readonly path: readonly { readonly nodeId: string; readonly layers: readonly [number, number] }[];
}

/** The f32 logits a last stage answered, copied out of the reply's bytes. */
export function logitsOf(output: Tensor, vocab: number): Float32Array {
  if (output.dtype !== 'f32' || output.data.byteLength !== vocab * 4) throw new SessionError('InvalidInput', `the last stage answered ${output.dtype} [${output.shape.join(', ')}], not the f32 [1, ${vocab}] logits of the model's vocabulary`);
  const copy = new Uint8Array(output.data);
  return new Float32Array(copy.buffer, 0, vocab);
}

/**
 * Runs a completion to its end. Library errors become `ServeError`s with the status to answer
 * (error-answers.ts).
 */
export async function runCompletion(o: CompletionRunOptions): Promise<CompletionResult> {
  const hops = new Map<number, { nodeId: string; layers: readonly [number, number] }>();
  let replayedBytes = 0;
  const runner = tensorStageRunner({
    calls: o.calls,
    sessionNamespace: o.sessionNamespace ?? '',
    ...(o.callTimeoutMs !== undefined ? { callTimeoutMs: o.callTimeoutMs } : {}),
    answered: (stage, _step, reply, replayBytes) => {
      if (stage.stageIndex === 0) hops.clear();
      hops.set(stage.layerStart, { nodeId: reply.nodeId, layers: [reply.layerStart, reply.layerEnd] });
      replayedBytes += replayBytes;
    },
  });
  let session;
  try {
    const historyBytes = { max: o.maxHistoryBytes ?? DEFAULT_MAX_HISTORY_BYTES, sizeOf: (x: unknown) => (x as Tensor).data.byteLength };
    session = openSession<Tensor>(swarmSessionHost(o.swarm), { model: o.model.id, tokens: o.promptIds.length + o.maxTokens }, runner, { ...o.session, historyBytes });
  } catch (error) {
    throw asServeError(error);
  }
  o.live?.add(session);
  const ids: number[] = [];
  const stopText = new StopText(o.stop);
  let finishReason: FinishReason = 'length';
  let logits: Float32Array = new Float32Array(0);
  try {
    let input = tokenTensor(o.promptIds);
    for (let step = 0; step < o.maxTokens; step++) {
      const output = await session.step(input);
      o.calls.metrics.steps.inc();
      logits = logitsOf(output, o.model.vocab);
      const id = sampleToken(logits, step, o.sampling);
      ids.push(id);
      if (id === o.model.tokenizer.eosTokenId) {
        finishReason = 'stop';
        break;
      }
      const delta = stopText.push(o.model.tokenizer.decode(ids));
      if (delta !== '') o.onText?.(delta, id);
      if (stopText.stopped) {
        finishReason = 'stop';
        break;
      }
      input = tokenTensor([id]);
    }
    const rest = stopText.flush();
    if (rest !== '') o.onText?.(rest, ids[ids.length - 1] ?? -1);
    const stats = session.stats();
    return {
      text: stopText.text,
      tokenIds: ids,
      finishReason,
      lastLogits: logits,
      sessionId: `${o.sessionNamespace ?? ''}${session.id}`,
      resumes: stats.resumes,
      replayedInputs: stats.replayedInputs,
      replayedBytes,
      path: [...hops.values()].sort((a, b) => a.layers[0] - b.layers[0]),
    };
  } catch (error) {
    throw asServeError(error);
  } finally {
    o.calls.metrics.resumes.inc(session.stats().resumes);
    o.live?.delete(session);
    session.close();
  }
}
