/**
 * The stand-in stage engine: no model, real time and a checked digest. Each layer's output is the
 * stateful digest of src/core/digest-model.ts (so a skipped layer, a wrong order or a cache rebuilt
 * from a wrong replay changes every later output), a call takes the simulated time of
 * digest-time.ts, and a prompt's cached leading blocks (digest-prefix-cache.ts) cost no prefill.
 * Its activation is a `u32` `[1, 1]` tensor (docs/engine.md). For tests and benches it can lie.
 */
import { runLayers, type LayerCaches } from '../../core/digest-model.js';
import type { Clock } from '../../runtime/types.js';
import { digestOf, digestTensor, digestTensors, hashText } from '../../wire/digest.js';
import { ServeError } from '../../wire/serve-error.js';
import { STAGE_LIMITS, timerDelay } from '../../wire/stage-bounds.js';
import type { Tensor } from '../../wire/tensor.js';
import type { EngineHoldings, LoadHint, StageCheck, StageEngine, StageSpan, StageStep, StepOutput } from '../stage-engine.js';
import { AgentPrefixCache } from './digest-prefix-cache.js';
import { stageDelayMs } from './digest-time.js';

/** Options of {@link DigestEngine}. */
export interface DigestEngineOptions {
  /** Capability: a call takes `layers × tokens × perLayerMs ÷ score`. */
  readonly score: number;
  /** Real milliseconds one layer takes for one token at score 1. @defaultValue 2 */
  readonly perLayerMs?: number;
  /** Relative jitter of a call's time, in [0, 1). @defaultValue 0.2 */
  readonly jitter?: number;
  /** Seeds the jitter and the lies. */
  readonly seed: number;
  /** Tests and benches only: the share of steps answered with a wrong output (drawn from `seed` and the call). @defaultValue 0 */
  readonly lieRate?: number;
  /** Sessions whose caches are kept; the least recently used is dropped past it. @defaultValue 4096 */
  readonly maxSessions?: number;
  /** The longest a call may be computed to take; a longer one is refused (422, field `tokens`). */
  readonly maxStageMs: number;
  /** KV memory kept for prompt prefixes, GB. */
  readonly kvCacheGb: number;
  /** Times the simulated work. */
  readonly clock: Clock;
}

/** One session's state on this engine: its per-layer digests and the inputs it ran. */
interface Held {
  readonly caches: LayerCaches;
  inputs: number;
}

/** The stand-in engine of `hecate-node agent`: digests, simulated time, a simulated prefix cache. */
export class DigestEngine implements StageEngine {
  readonly kind = 'digest';
  private readonly sessions = new Map<string, Held>();
  private readonly spans = new Map<string, StageSpan>();
  /** Layer caches held over every session: bounded by {@link STAGE_LIMITS}.cachedLayers. */
  private cachedLayers = 0;
  private readonly prefixes: AgentPrefixCache;
  private readonly perLayerMs: number;
  private readonly jitter: number;
  private readonly lieRate: number;
  private readonly maxSessions: number;

  constructor(private readonly options: DigestEngineOptions) {
    this.prefixes = new AgentPrefixCache(options.kvCacheGb);
    this.perLayerMs = options.perLayerMs ?? 2;
    this.jitter = options.jitter ?? 0.2;
    this.lieRate = options.lieRate ?? 0;
    this.maxSessions = options.maxSessions ?? 4096;
  }

  /**
   * Nothing to read: the span is remembered for {@link holds}. A rebalance's load of a span not
   * held yet takes the modelled time (`hint.seconds`), as reading its weights would.
   */
  async load(span: StageSpan, signal?: AbortSignal, hint?: LoadHint): Promise<void> {
    const key = `${span.modelId}/${span.layerStart}/${span.layerEnd}`;
    const seconds = hint?.seconds ?? 0;
    if (!this.spans.has(key) && seconds > 0) await this.work(seconds * 1000, signal ?? new AbortController().signal);
    this.spans.set(key, span);
  }

  /** Refuses a call computed to take longer than `maxStageMs` (422, field `tokens`), before it waits or runs. */
  check(call: StageCheck): void {
    const layers = call.span.layerEnd - call.span.layerStart;
    const ms = this.timeOf(call.span, call.tokens + call.replay, `${call.sessionId}/${call.step}/${call.span.layerStart}`);
    if (!(ms <= this.options.maxStageMs)) throw new ServeError('InvalidRequest', 422, `tokens: ${layers} layers × ${call.tokens + call.replay} tokens is computed to take ${Math.round(ms)} ms, over this agent's bound of ${this.options.maxStageMs} ms per call`, { field: 'tokens' });
  }

  async step(call: StageStep): Promise<StepOutput> {
    const { sessionId, span } = call;
    const input = digestOf(call.input, 'input');
    if (!this.sessions.has(sessionId)) throw new ServeError('UnknownSession', 409, `the digest engine holds no state of session "${sessionId}" (restarted?); send fresh with the replay`, { field: 'sessionId' });
    const tokens = call.tokens ?? 1;
    // Prefill is charged for the prompt's uncached tokens only (the bound held for all of them).
    const cachedTokens = call.prompt === undefined ? undefined : this.prefixes.serve(span.modelId, span.layerStart, span.layerEnd, span.layers, call.prompt, tokens);
    await this.work(this.timeOf(span, Math.max(1, tokens - (cachedTokens ?? 0)), `${sessionId}/${call.step}/${span.layerStart}`), call.signal);
    const held = this.touch(sessionId);
    const honest = this.run(held, input, span);
    const lie = this.lieRate > 0 && hashText(`${sessionId}/${call.step}/${span.layerStart}`, this.options.seed ^ 0x5bd1e995) / 0x1_0000_0000 < this.lieRate;
    this.evict(sessionId);
    return { output: digestTensor(lie ? (honest ^ 0x1) >>> 0 : honest), ...(cachedTokens !== undefined ? { cachedTokens } : {}) };
  }

  rebuild(sessionId: string, span: StageSpan, inputs: readonly Tensor[], signal: AbortSignal): Promise<readonly Tensor[]> {
    // Read at once and not kept while the work waits: a flood of replays holds digests, not tensors.
    let digests: number[];
    try {
      digests = inputs.map((t, i) => digestOf(t, `replay/${i}`));
    } catch (error) {
      return Promise.reject(error);
    }
    return this.rebuildDigests(sessionId, span, digests, signal);
  }

  private async rebuildDigests(sessionId: string, span: StageSpan, digests: readonly number[], signal: AbortSignal): Promise<readonly Tensor[]> {
    if (digests.length > 0) await this.work(this.timeOf(span, digests.length, `${sessionId}/replay/${span.layerStart}`), signal);
    const held = this.touch(sessionId);
    this.cachedLayers -= held.caches.size;
    for (let layer = span.layerStart; layer < span.layerEnd; layer++) held.caches.delete(layer);
    this.cachedLayers += held.caches.size;
    const outputs = digestTensors(digests.map((x) => this.run(held, x, span)));
    this.evict(sessionId);
    return outputs;
  }

  drop(sessionId: string): boolean {
    const held = this.sessions.get(sessionId);
    if (held === undefined) return false;
    this.sessions.delete(sessionId);
    this.cachedLayers -= held.caches.size;
    return true;
  }

  holds(): EngineHoldings {
    let inputs = 0;
    let sessions = 0;
    for (const held of this.sessions.values()) {
      inputs += held.inputs;
      if (held.caches.size > 0) sessions++;
    }
    // Two 32-bit numbers per layer cache (its index and digest): the weights are none.
    return { sessions, cachedTokens: inputs, memoryBytes: this.cachedLayers * 8, spans: [...this.spans.values()] };
  }

  /** A call of `tokens` tokens on `span`: the simulated time, jittered by `key`. */
  private timeOf(span: StageSpan, tokens: number, key: string): number {
    return stageDelayMs({ layers: span.layerEnd - span.layerStart, tokens, perLayerMs: this.perLayerMs, score: this.options.score }, this.jitter, this.options.seed, key);
  }

  /** The session's state, made most recently used (the Map's order is the LRU order). */
  private touch(sessionId: string): Held {
    const held = this.sessions.get(sessionId) ?? { caches: new Map(), inputs: 0 };
    this.sessions.delete(sessionId);
    this.sessions.set(sessionId, held);
    return held;
  }

  private run(held: Held, input: number, span: StageSpan): number {
    this.cachedLayers -= held.caches.size;
    const output = runLayers(input, span.layerStart, span.layerEnd, held.caches);
    this.cachedLayers += held.caches.size;
    held.inputs++;
    return output;
  }

  /** The least recently used sessions go past either bound (sessions kept, layer caches held), never `keep`. */
  private evict(keep: string): void {
    for (const [oldest, held] of this.sessions) {
      if (this.sessions.size <= this.maxSessions && this.cachedLayers <= STAGE_LIMITS.cachedLayers) break;
      if (oldest === keep) break;
      this.sessions.delete(oldest);
      this.cachedLayers -= held.caches.size;
    }
  }

  /** The simulated work's wait, cut short (rejecting) when the call is cancelled. */
  private work(ms: number, signal: AbortSignal): Promise<void> {
    const clock = this.options.clock;
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        signal.removeEventListener('abort', cancel);
        resolve();
      };
      const timer = clock.setTimeout(done, timerDelay(ms));
      const cancel = (): void => {
        clock.clearTimeout(timer);
        reject(signal.reason);
      };
      if (signal.aborted) cancel();
      else signal.addEventListener('abort', cancel, { once: true });
    });
  }
}
