/**
 * One token generation of `POST /v1/completions` (completions-route.ts), as one {@link Generation}:
 * the prompt's token ids into the first stage, each step's last-stage logits sampled into the next
 * token (src/model/sampler.ts: greedy at temperature 0, else drawn by (seed, step), so a resumed
 * generation draws what the unbroken one would), until `maxTokens`, the end-of-sequence token or
 * a stop string. The Generation admits it in its class's band, verifies a share of its calls on
 * other copies (bit for bit), and under an idempotency key checkpoints its token ids, so a retry
 * resumes from them; its session resumes a failed stage from the failed span, the replacement's KV
 * cache rebuilt by replaying the boundary activations the session kept (docs/completions.md).
 */
import { createHash } from 'node:crypto';
import { SessionError } from '../core/errors.js';
import { systemClock } from '../runtime/clock.js';
import type { Swarm } from '../runtime/swarm.js';
import type { Clock } from '../runtime/types.js';
import type { SessionOptions } from '../sessions/session-types.js';
import { sampleToken, type SamplingOptions } from '../model/sampler.js';
import type { ModelTokenizer } from '../model/tokenizer.js';
import { hashText } from '../wire/digest.js';
import type { Tensor } from '../wire/tensor.js';
import { tokenTensor } from '../wire/tensor.js';
import { Generation } from './generation.js';
import type { GenerationRun, GenerationTask, StoredAnswer, TaskRunnerOptions } from './generation-task.js';
import { generateIdempotent, type IdempotencySettings } from './idempotent-generate.js';
import type { StageCalls } from './stage-client.js';
import { sameTensor, tensorStageRunner } from './tensor-stage-runner.js';
import { StopText } from '../model/stop-text.js';
import type { HistoryHolder } from './completion-metrics.js';
import type { SpanChecks } from './verify-span.js';

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
  /** Its session's options: `stageTimeoutMs` is each call's budget (plus a sixteenth per replayed input), `deadlineMs` the whole completion's. */
  readonly session: SessionOptions;
  readonly sessionNamespace?: string;
  /** The orchestrator's clock: the calls' budgets, the wait for a slot, the deadline. @defaultValue systemClock */
  readonly clock?: Clock;
  /** Its band in the admission queue (the client class's priority). @defaultValue 0 */
  readonly priority?: number;
  /** Its client class, for the wait histogram. @defaultValue 'default' */
  readonly className?: string;
  /** Verifies a share of the stage calls on other copies (verify-span.ts): outputs compared bit for bit. */
  readonly checks?: SpanChecks;
  /** An idempotency key: its token ids checkpointed in `settings.store`, a retry resumed from them (idempotent-generate.ts). */
  readonly idempotency?: { readonly key: string; readonly settings: IdempotencySettings; readonly cancel: AbortSignal };
  /**
   * Bytes of boundary activations its session keeps for replay; past it they are dropped and a
   * failure recomputes from the token ids. @defaultValue {@link DEFAULT_MAX_HISTORY_BYTES}
   */
  readonly maxHistoryBytes?: number;
  /** Its session is in this set while it runs (the metrics read its history's bytes). */
  readonly live?: Set<HistoryHolder>;
  /** Told each piece of text as it becomes final (streaming); a resumed completion's restored text first. */
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
  /** Tokens taken from an idempotency key's checkpoint (0: none). */
  readonly resumedFrom: number;
}

/** The f32 logits a last stage answered, copied out of the reply's bytes. */
export function logitsOf(output: Tensor, vocab: number): Float32Array {
  if (output.dtype !== 'f32' || output.data.byteLength !== vocab * 4) throw new SessionError('InvalidInput', `the last stage answered ${output.dtype} [${output.shape.join(', ')}], not the f32 [1, ${vocab}] logits of the model's vocabulary`);
  const copy = new Uint8Array(output.data);
  return new Float32Array(copy.buffer, 0, vocab);
}

/** A result as an idempotency key keeps it: JSON, the logits' bytes in base64. */
const STORED: StoredAnswer<CompletionResult> = {
  encode: (r) => ({ ...r, lastLogits: Buffer.from(r.lastLogits.buffer, r.lastLogits.byteOffset, r.lastLogits.byteLength).toString('base64') }),
  decode: (stored) => {
    const r = stored as Omit<CompletionResult, 'lastLogits'> & { lastLogits: string };
    const bytes = Buffer.from(r.lastLogits, 'base64');
    return { ...r, lastLogits: new Float32Array(new Uint8Array(bytes).buffer, 0, bytes.byteLength / 4) };
  },
  steps: (r) => r.tokenIds.length,
};

/** The work of one completion: its token ids, its stop text, its last logits. */
class CompletionTask implements GenerationTask<Tensor, CompletionResult> {
  readonly model: string;
  readonly promptTokens: number;
  readonly promptIds: readonly number[];
  readonly steps: number;
  readonly modelled = false;
  readonly fingerprint: string;
  readonly first: number;
  readonly stored = STORED;
  readonly session: Pick<SessionOptions, 'historyBytes'>;
  private readonly ids: number[] = [];
  private readonly stopText: StopText;
  private finishReason: FinishReason = 'length';
  private logits: Float32Array = new Float32Array(0);
  private replayedBytes = 0;

  constructor(private readonly o: CompletionRunOptions) {
    this.model = o.model.id;
    this.promptTokens = o.promptIds.length;
    this.promptIds = o.promptIds;
    this.steps = o.maxTokens;
    this.stopText = new StopText(o.stop);
    const { temperature, topP, seed } = o.sampling;
    this.fingerprint = createHash('sha256').update(JSON.stringify(['completion', o.model.id, o.promptIds, o.maxTokens, temperature, topP ?? 1, seed ?? 0, o.stop])).digest('hex').slice(0, 32);
    this.first = hashText(o.promptIds.join(','));
    this.session = { historyBytes: { max: o.maxHistoryBytes ?? DEFAULT_MAX_HISTORY_BYTES, sizeOf: (x: unknown) => (x as Tensor).data.byteLength } };
  }

  input(step: number, value: number): Tensor {
    return step === 0 ? tokenTensor(this.o.promptIds) : tokenTensor([value]);
  }

  restore(values: readonly number[]): void {
    for (const id of values) this.accept(id);
  }

  next(step: number, output: Tensor): { value: number; done: boolean } {
    this.logits = logitsOf(output, this.o.model.vocab);
    const id = sampleToken(this.logits, step, this.o.sampling);
    return { value: id, done: this.accept(id) };
  }

  /** A token generated (or restored): its text told once final; true when it ends the completion. */
  private accept(id: number): boolean {
    const { tokenizer } = this.o.model;
    this.ids.push(id);
    if (id === tokenizer.eosTokenId) {
      this.finishReason = 'stop';
      return true;
    }
    const delta = this.stopText.push(tokenizer.decode(this.ids));
    if (delta !== '') this.o.onText?.(delta, id);
    if (!this.stopText.stopped) return false;
    this.finishReason = 'stop';
    return true;
  }

  runner(options: TaskRunnerOptions) {
    const { calls, timing, sessionNamespace, answered } = options;
    return tensorStageRunner({
      calls,
      sessionNamespace,
      timing,
      ...(answered !== undefined
        ? {
            answered: (stage, step, reply, replayBytes) => {
              this.replayedBytes += replayBytes;
              answered(stage, step, reply);
            },
          }
        : {}),
    });
  }

  same(a: Tensor, b: Tensor): boolean {
    return sameTensor(a, b);
  }

  opened(session: HistoryHolder): void {
    this.o.live?.add(session);
  }

  closed(session: HistoryHolder): void {
    this.o.live?.delete(session);
  }

  reply(run: GenerationRun): CompletionResult {
    const rest = this.stopText.flush();
    if (rest !== '') this.o.onText?.(rest, this.ids[this.ids.length - 1] ?? -1);
    return {
      text: this.stopText.text,
      tokenIds: [...this.ids],
      finishReason: this.finishReason,
      lastLogits: this.logits,
      sessionId: run.sessionId,
      resumes: run.stats.resumes,
      replayedInputs: run.stats.replayedInputs,
      replayedBytes: this.replayedBytes,
      path: run.path,
      resumedFrom: run.resumedFrom,
    };
  }
}

/** A completion's {@link Generation} (its admission and refusal, for the metrics) and the run of it. */
export interface CompletionGeneration {
  readonly generation: Generation<Tensor, CompletionResult>;
  /** Runs it to its end (once), under its idempotency key when it has one. */
  run(): Promise<CompletionResult>;
}

/** Builds a completion's Generation. */
export function completionGeneration(o: CompletionRunOptions): CompletionGeneration {
  const clock = o.clock ?? systemClock;
  const generation = new Generation<Tensor, CompletionResult>({
    swarm: o.swarm,
    calls: o.calls,
    clock,
    session: o.session,
    ...(o.sessionNamespace !== undefined ? { sessionNamespace: o.sessionNamespace } : {}),
    ...(o.priority !== undefined ? { priority: o.priority } : {}),
    ...(o.className !== undefined ? { className: o.className } : {}),
    ...(o.checks !== undefined ? { checks: o.checks } : {}),
    task: new CompletionTask(o),
  });
  const keyed = o.idempotency;
  return {
    generation,
    run: () => (keyed === undefined ? generation.run() : generateIdempotent({ key: keyed.key, task: generation.task, settings: keyed.settings, clock, cancel: keyed.cancel }, (progress) => generation.run(progress))),
  };
}

/**
 * Runs a completion to its end, as one {@link Generation}. Library errors become `ServeError`s
 * with the status to answer (error-answers.ts); an idempotency key's, `IdempotencyError`s.
 */
export function runCompletion(o: CompletionRunOptions): Promise<CompletionResult> {
  return completionGeneration(o).run();
}
