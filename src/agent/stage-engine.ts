/**
 * The seam between an agent and the compute it serves: one interface, three kinds of engine
 * (the stand-in digest, the reference Llama engine, a user's own). The agent owns the HTTP, the
 * signatures, the slots and the bounds; an engine owns its weights and its per-session caches
 * (docs/engine.md).
 */
import type { Tensor } from '../wire/tensor.js';
import type { KvEventFeed } from './kv-event-feed.js';

/** A contiguous layer range of one model, half-open, as the plan gives it to the agent. */
export interface StageSpan {
  readonly modelId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  /** The model's whole layer count: the span is the first stage when layerStart is 0, the last when layerEnd equals it. */
  readonly layers: number;
}

/** One step of one session on one span. */
export interface StageStep {
  readonly sessionId: string;
  readonly span: StageSpan;
  /** The step's index in its session (0 for the prompt's step). */
  readonly step: number;
  /**
   * The step's input: token ids (`i32` `[tokens]`) on the first stage, the previous stage's
   * activations (`[tokens, hidden]`) after it.
   */
  readonly input: Tensor;
  /** Aborted when the session is dropped or the caller hangs up: stop computing. */
  readonly signal: AbortSignal;
  /**
   * Tokens the input stands for, as the call says (the prompt's on step 0, 1 after): a real
   * engine reads them from the input's leading dimension; the digest's `[1, 1]` stands for them.
   */
  readonly tokens?: number;
  /** The prompt's text, on step 0 of the first stage: an engine with a prefix cache looks it up. */
  readonly prompt?: string;
}

/** A step's output with what the engine found cached of the prompt (its leading tokens charged no prefill). */
export interface StepOutput {
  readonly output: Tensor;
  readonly cachedTokens?: number;
}

/** What a stage call asks, as an engine's {@link StageEngine.check} sees it before anything runs. */
export interface StageCheck {
  readonly sessionId: string;
  readonly span: StageSpan;
  readonly step: number;
  /** Tokens the input stands for. */
  readonly tokens: number;
  /** Replayed inputs to rebuild from first (0 when none). */
  readonly replay: number;
}

/** What an engine holds, for `/v1/health`, `/metrics` and the conformance runner. */
export interface EngineHoldings {
  /** Sessions with any cache held. */
  readonly sessions: number;
  /** Tokens cached over every session and span (KV rows, or steps for the digest engine). */
  readonly cachedTokens: number;
  /** Bytes of memory the engine holds: weights plus caches. */
  readonly memoryBytes: number;
  /** Bytes of its sessions' KV caches alone (reported to the orchestrator with each heartbeat). @defaultValue none: an engine without a KV cache */
  readonly kvBytes?: number;
  /** The spans loaded. */
  readonly spans: readonly StageSpan[];
}

/** What the orchestrator tells an engine of a span it asks it to load (docs/rebalance.md "Replicas, serve and agents"). */
export interface LoadHint {
  /** The modelled load time in seconds: an engine that reads no weights (the stand-in) takes it; one that reads them ignores it. */
  readonly seconds?: number;
}

/** A stage engine: loads spans, runs steps, rebuilds and drops sessions' caches. */
export interface StageEngine {
  /** A short name for logs and `/v1/health`: `digest`, `reference`, … */
  readonly kind: string;
  /** Makes `span` servable (reads its weights); resolves once it is. Idempotent. `hint`: a rebalance's load (`POST /v1/spans/load`). */
  load(span: StageSpan, signal?: AbortSignal, hint?: LoadHint): Promise<void>;
  /**
   * Runs one step: the input through the span's layers, appending to the session's caches; the
   * output is the next stage's input, or (last stage) the logits of the input's last token.
   * A session it holds nothing of on the span (never rebuilt, dropped, evicted, or the agent
   * restarted) is refused with a `ServeError` 409 `UnknownSession` (the orchestrator then replays).
   */
  step(call: StageStep): Promise<Tensor | StepOutput>;
  /**
   * Drops whatever `sessionId` holds on `span`, then runs `inputs` (oldest first) through it to
   * rebuild its caches, and returns their outputs in order (a later replacement's replay).
   */
  rebuild(sessionId: string, span: StageSpan, inputs: readonly Tensor[], signal: AbortSignal): Promise<readonly Tensor[]>;
  /** Drops every cache of `sessionId`; false if it held none. */
  drop(sessionId: string): boolean;
  /** What it holds now. */
  holds(): EngineHoldings;
  /**
   * Optional: refuses, before anything runs or waits for a slot, a call this engine must not run
   * (say its computed time is past a bound), with a `ServeError` naming the field.
   */
  check?(call: StageCheck): void;
  /**
   * Optional: elements per token of the widest activation it takes (the hidden size of the widest
   * model it serves); the agent bounds a stage call's body and tensors by it (docs/engine.md,
   * "Bounds"). @defaultValue 1 (the digest's `[1, 1]`)
   */
  readonly maxWidth?: number;
  /**
   * Optional: the token-id blocks its caches hold, as events (docs/prefix-cache.md, "Precise
   * mode"): the agent reports them and the router's index of its copies is then exact.
   */
  readonly kvFeed?: KvEventFeed;
}
