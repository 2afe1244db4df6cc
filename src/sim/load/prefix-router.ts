/**
 * What a W7 policy implements: a router that sees each request's prompt, hears how it ended (with
 * the cached tokens the first node reported), and gets the monitor's per-copy samples.
 */
import type { BuiltTopology, SimStage } from './load-topology.js';
import type { Rng } from './rng.js';
import type { PromptRequest } from './prefix-workloads.js';

/** The copy chosen for one request. */
export interface PrefixPick {
  readonly pipeline: number;
  readonly stages: readonly SimStage[];
  /** Whatever the router needs back (a lease). */
  readonly token?: unknown;
}

/** How a request ended. */
export interface PrefixOutcome {
  /** Its first token came before the client timeout. */
  readonly ok: boolean;
  readonly ttftMs: number;
  /** Prompt tokens the first node of its copy found cached (its report). */
  readonly cachedTokens: number;
}

/** The monitor's view of one copy (sampled every 100 ms, 50 ms late). */
export interface CopySample {
  /** Jobs waiting at its nodes (not in service), summed. */
  readonly queue: number;
  /** Largest share of a node's KV reserve in use. */
  readonly kvUtil: number;
}

/** The engine's truth, for the references (oracle) and for policies fed by cache events (Dynamo). */
export interface PrefixTruth {
  /** Leading blocks of `blocks` held by the node now. */
  cachedBlocks(node: number, blocks: Float64Array): number;
  /** Leading blocks of `blocks` held by the node now or by a prompt queued or in prefill there (held once it ends). */
  comingBlocks(node: number, blocks: Float64Array): number;
  /** Work queued or in service at the node, ms. */
  backlogMs(node: number): number;
}

/** One W7 router. */
export interface PrefixRouter {
  pick(now: number, request: PromptRequest): PrefixPick | undefined;
  /** The request's first token came (or the client gave up) and the node reported its cached tokens. */
  first(now: number, pick: PrefixPick, request: PromptRequest, outcome: PrefixOutcome): void;
  /** The request finished answering (its decode is over, or it timed out). */
  done(now: number, pick: PrefixPick, request: PromptRequest): void;
  telemetry(now: number, copies: readonly CopySample[]): void;
  /** Optional: a node's cache changed, as its engine's KV events say (precise mode: docs/prefix-cache.md). */
  kv?(node: number, event: SimKvEvent): void;
}

/** One change of a node's cache: blocks stored (hash, parent, token ids) or removed, hashes as the engine names them. */
export type SimKvEvent =
  | { readonly kind: 'stored'; readonly blocks: readonly { readonly hash: string; readonly parent?: string; readonly tokens: readonly number[] }[] }
  | { readonly kind: 'removed'; readonly hashes: readonly string[] };

/** What a W7 policy is built with. */
export interface PrefixRouterContext {
  readonly topology: BuiltTopology;
  readonly rng: Rng;
  readonly clock: { now(): number };
  readonly seed: number;
  readonly truth: PrefixTruth;
}

/** A W7 policy. */
export interface PrefixPolicy {
  readonly id: string;
  readonly label: string;
  /** Reads the engine's truth beyond what its real counterpart learns (a reference, not an option). */
  readonly oracle?: boolean;
  create(context: PrefixRouterContext): PrefixRouter;
}
