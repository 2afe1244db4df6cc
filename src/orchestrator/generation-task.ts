/**
 * What one {@link Generation} computes, step by step: the stand-in digest of `POST /v1/generate`
 * (digest-task.ts) or the real tokens of `POST /v1/completions` (completion-run.ts). The
 * Generation owns what every request shares — its deadline, its one admission, its session, its
 * verification, its idempotency key's checkpoints — and asks its task what a step's input is, what
 * its output means, how its stage calls go on the wire and what it answers.
 */
import type { SessionOptions, SessionStage, SessionStats, StageRunner } from '../sessions/session-types.js';
import type { StageCalls, StageTiming } from './stage-client.js';

/** What a stage call's answer tells its generation: who ran which layers, what it found cached of the prompt. */
export interface HopReply {
  readonly nodeId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly cachedTokens?: number;
}

/** How a task's stage runner is built: one generation's calls, timing and namespace. */
export interface TaskRunnerOptions {
  readonly calls: StageCalls;
  readonly timing: StageTiming;
  /** Goes before the session's id wherever it leaves the orchestrator. */
  readonly sessionNamespace: string;
  /** Told every answered call of the session (absent for a verification's check calls). */
  readonly answered?: (stage: SessionStage, step: number, reply: HopReply) => void;
}

/** What `run` is given to resume and checkpoint: where it starts, what to do after each step, when to stop. */
export interface GenerateProgress {
  /** The step inputs at layer 0 so far as checkpoint values, oldest first: the first is the task's `first`, the last the next step's input. */
  readonly inputs: readonly number[];
  /** Called after each step with the steps done and the next input's checkpoint value; resolves when the generation may go on. */
  afterStep(done: number, value: number): Promise<void>;
  /** Aborted when the client went away or the key was taken over: the stage calls stop. */
  readonly signal: AbortSignal;
}

/** What a finished generation hands its task to answer with. */
export interface GenerationRun {
  /** The session's id as the agents saw it (namespaced). */
  readonly sessionId: string;
  /** Steps run, those taken from a checkpoint included. */
  readonly steps: number;
  /** Steps taken from an idempotency key's checkpoint (0: none). */
  readonly resumedFrom: number;
  /** Which agent ran which layers of the last step, in order. */
  readonly path: readonly { readonly nodeId: string; readonly layers: readonly [number, number] }[];
  /** Its run's milliseconds, not its wait for a slot. */
  readonly ms: number;
  readonly stats: SessionStats;
}

/** How an idempotency key keeps a task's answer: as JSON, and the steps it counts. */
export interface StoredAnswer<R> {
  encode(reply: R): unknown;
  decode(stored: unknown): R;
  steps(reply: R): number;
}

/** One request's work, as its {@link Generation} runs it. */
export interface GenerationTask<T, R> {
  readonly model: string;
  /** The prompt's tokens (at least 1). */
  readonly promptTokens: number;
  /** Steps at most (a task may end sooner: {@link next}). */
  readonly steps: number;
  /** The prompt's text, sent with the first step for the agents' prompt-prefix cache and learnt by the router's index. */
  readonly prompt?: string;
  /** The prompt's token ids, routed by (the router's index keys them as a precise copy's engine reports them: docs/prefix-cache.md, "Precise mode"); not sent. */
  readonly promptIds?: readonly number[];
  /** Whether the orchestrator's work model times it: its deadline checked at build, its calls budgeted by their work. False: each call's budget is the stage timeout. */
  readonly modelled: boolean;
  /** What identifies the request behind an idempotency key (a hash: another request under the same key is refused). */
  readonly fingerprint: string;
  /** The first step's input as a checkpoint value. */
  readonly first: number;
  /** How an idempotency key keeps its answer. */
  readonly stored: StoredAnswer<R>;
  /** Session options of its own (a bound on the history's bytes). */
  readonly session?: Pick<SessionOptions, 'historyBytes'>;
  /** The input of step `step` from its checkpoint value. */
  input(step: number, value: number): T;
  /** Resuming from a checkpoint: the values of the inputs of steps 1 to n (what steps 0 to n − 1 gave). */
  restore(values: readonly number[]): void;
  /** Step `step` answered `output`: the next input's checkpoint value, and whether the generation ends with it. */
  next(step: number, output: T): { readonly value: number; readonly done: boolean };
  /** The stage runner of its session's calls on the wire. */
  runner(options: TaskRunnerOptions): StageRunner<T>;
  /** Whether two outputs of one stage call agree (verification). */
  same(a: T, b: T): boolean;
  /** Told when its session opens and closes (a completion counts its history's bytes meanwhile). */
  opened?(session: { historyBytes(): number }): void;
  closed?(session: { historyBytes(): number }): void;
  /** Its answer. */
  reply(run: GenerationRun): R;
}
