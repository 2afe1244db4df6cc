/**
 * The reference engine: Hugging Face `LlamaForCausalLM` for the layers of the spans it loads, with
 * a KV cache per session per span, bounded in bytes (idle sessions evicted least-recently-used).
 * Matrix products in WebAssembly SIMD128, the rest in JavaScript; one code path whatever the batch:
 * a token's row is the same bits in a prefill, a decode or a replay, so a rebuilt cache equals the
 * original (docs/engine-reference.md).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { heldWeightBytes, parseLlamaConfig, readLlamaConfig } from '../../../model/config.js';
import { openModelWeights } from '../../../model/model-weights.js';
import { decodeElements } from '../../../model/safetensors.js';
import { elementsOf, f32Tensor, type Tensor } from '../../../wire/tensor.js';
import type { EngineHoldings, StageEngine, StageSpan, StageStep } from '../../stage-engine.js';
import { ReferenceEngineError } from './engine-error.js';
import { inverseFrequencies } from './llama-kernels.js';
import { KV_BLOCK_TOKENS, SessionCache } from './session-cache.js';
import { KvEventFeed } from '../../kv-event-feed.js';
import { forwardSpan, type SpanInput, type SpanModel } from './span-forward.js';
import { loadSpanWeights } from './span-weights.js';
import { WasmKernels } from './wasm-kernels.js';

/** Where the models are and how much KV memory the engine may hold. */
export interface ReferenceEngineOptions {
  /** Model id → its Hugging Face model directory. */
  readonly models: ReadonlyMap<string, string>;
  /** Bytes of KV cache held over every session and span; overrides the bound `memoryBytes` gives. */
  readonly kvMemoryBytes?: number;
  /**
   * The agent's memory in bytes (`--memory`): without `kvMemoryBytes`, the KV caches are bounded
   * by the KV memory the plan gave it, this less the weights of the layers it holds as the plan
   * counts them (the config's shapes and dtype; the embeddings on a first stage, the final norm
   * and LM head on a last; a layer held by two spans counted once). @defaultValue Infinity
   */
  readonly memoryBytes?: number;
  /**
   * The widest activation it takes, in elements per token: the agent bounds stage calls by it
   * (docs/engine.md, "Bounds"). Without it, the widest `hidden_size` of the models' configs, read
   * at construction.
   */
  readonly maxWidth?: number;
}

interface LoadedSpan {
  readonly span: StageSpan;
  readonly model: SpanModel;
}

const spanKey = (span: StageSpan): string => `${span.modelId}:${span.layerStart}-${span.layerEnd}/${span.layers}`;
const cacheKey = (span: string, sessionId: string): string => `${span}\u0000${sessionId}`;

/** A {@link StageEngine} running Llama layers (WebAssembly SIMD128 products, JavaScript for the rest). */
export class ReferenceEngine implements StageEngine {
  readonly kind = 'reference';
  private readonly models: ReadonlyMap<string, string>;
  /** The fixed bound (`kvMemoryBytes`), or undefined when the plan's budget bounds the caches. */
  private readonly kvFixed: number | undefined;
  private readonly memoryBytes: number;
  private kvBound: number;
  private readonly spans = new Map<string, LoadedSpan>();
  private readonly loading = new Map<string, Promise<void>>();
  /** Every session's cache on every span, least recently used first. */
  private readonly caches = new Map<string, SessionCache>();
  private kvBytes = 0;
  /** Elements per token of the widest activation: the widest hidden size of its models. */
  readonly maxWidth: number;
  /** The token-id blocks its first stages' caches hold, in blocks of {@link KV_BLOCK_TOKENS} (docs/prefix-cache.md, "Precise mode"). */
  readonly kvFeed = new KvEventFeed(KV_BLOCK_TOKENS);

  constructor(options: ReferenceEngineOptions) {
    this.models = options.models;
    this.maxWidth = options.maxWidth ?? Math.max(1, ...[...options.models.values()].map(hiddenSizeOf));
    this.kvFixed = options.kvMemoryBytes;
    this.memoryBytes = options.memoryBytes ?? Infinity;
    if (this.kvFixed !== undefined && !(this.kvFixed > 0)) throw new ReferenceEngineError('InvalidInput', `kvMemoryBytes must be a positive number of bytes, got ${String(options.kvMemoryBytes)}`);
    if (!(this.memoryBytes > 0)) throw new ReferenceEngineError('InvalidInput', `memoryBytes must be a positive number of bytes, got ${String(options.memoryBytes)}`);
    this.kvBound = this.kvFixed ?? this.memoryBytes;
  }

  /**
   * Reads the span's config and only its own tensors. Idempotent.
   * @throws {ReferenceEngineError} `UnknownModel`, `InvalidSpan`; the model reader's `ModelError`
   *   for a config it refuses or weights that do not fit it.
   */
  load(span: StageSpan, signal?: AbortSignal): Promise<void> {
    const key = spanKey(span);
    if (this.spans.has(key)) return Promise.resolve();
    let pending = this.loading.get(key);
    if (pending === undefined) {
      pending = this.read(span, key, signal).finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    return pending;
  }

  private async read(span: StageSpan, key: string, signal: AbortSignal | undefined): Promise<void> {
    const dir = this.models.get(span.modelId);
    if (dir === undefined) throw new ReferenceEngineError('UnknownModel', `model "${span.modelId}" is not one this engine was given (${[...this.models.keys()].join(', ') || 'none'})`);
    const config = await readLlamaConfig(dir);
    if (span.layers !== config.num_hidden_layers || !Number.isInteger(span.layerStart) || !Number.isInteger(span.layerEnd) || span.layerStart < 0 || span.layerEnd <= span.layerStart || span.layerEnd > span.layers) {
      throw new ReferenceEngineError('InvalidSpan', `span [${span.layerStart}, ${span.layerEnd}) of ${span.layers} layers does not fit model "${span.modelId}" (${config.num_hidden_layers} layers in ${dir}/config.json)`);
    }
    const weights = await loadSpanWeights(await openModelWeights(dir), config, span.layerStart, span.layerEnd, new WasmKernels());
    if (signal?.aborted === true) throw new ReferenceEngineError('Aborted', `loading span ${key} was aborted`);
    this.spans.set(key, { span: { ...span }, model: { config, weights, inverseFrequencies: inverseFrequencies(config.head_dim, config.rope_theta), rotary: [] } });
    this.kvBound = this.kvFixed ?? this.memoryBytes - this.plannedWeightBytes();
  }

  /** The weights of the layers it holds (or of `spans`) as the plan counts them, over every model (each layer once). */
  plannedWeightBytes(spans: Iterable<LoadedSpan> = this.spans.values()): number {
    const held = new Map<string, { config: LoadedSpan['model']['config']; layers: Set<number> }>();
    for (const { span, model } of spans) {
      const entry = held.get(span.modelId) ?? { config: model.config, layers: new Set<number>() };
      for (let l = span.layerStart; l < span.layerEnd; l++) entry.layers.add(l);
      held.set(span.modelId, entry);
    }
    let bytes = 0;
    for (const { config, layers } of held.values()) bytes += heldWeightBytes(config, layers.size, layers.has(0), layers.has(config.num_hidden_layers - 1));
    return bytes;
  }

  /** Bytes of KV cache it may hold now: `kvMemoryBytes`, or its memory less {@link plannedWeightBytes}. */
  kvBoundBytes(): number {
    return this.kvBound;
  }

  /**
   * Runs one step. Step `s` of a session follows its step `s − 1`; a step already run (a retry)
   * runs again from where it began.
   * @throws {ReferenceEngineError} `SpanNotLoaded`, `InvalidInput`, `SessionNotHeld` (rebuild the
   *   session), `ContextExceeded`, `KvMemoryExhausted`, `Aborted`. The cache is unchanged by a refusal.
   */
  async step(call: StageStep): Promise<Tensor> {
    const key = spanKey(call.span);
    const loaded = this.spans.get(key);
    if (loaded === undefined) throw new ReferenceEngineError('SpanNotLoaded', `span ${key} is not loaded (session "${call.sessionId}", step ${call.step})`);
    return this.run(loaded, key, call.sessionId, call.step, call.input, call.signal);
  }

  private async run(loaded: LoadedSpan, key: string, sessionId: string, step: number, tensor: Tensor, signal: AbortSignal): Promise<Tensor> {
    const { config } = loaded.model;
    const input = this.decodeInput(loaded, tensor, sessionId, step);
    const tokens = 'ids' in input ? input.ids.length : input.tokens;
    const ck = cacheKey(key, sessionId);
    this.spans.delete(key); // most recently stepped last (unloadIdleSpans lets go of the first)
    this.spans.set(key, loaded);
    const held = this.caches.get(ck);
    if (held === undefined ? step !== 0 : step > held.stepTokens.length || !Number.isInteger(step) || step < 0) {
      throw new ReferenceEngineError('SessionNotHeld', `session "${sessionId}" holds ${held?.stepTokens.length ?? 0} steps on span ${key}, so step ${step} cannot run: rebuild it`);
    }
    if (held !== undefined && held.busy > 0) throw new ReferenceEngineError('InvalidInput', `session "${sessionId}" is already running a step on span ${key}`);
    if (signal.aborted) throw new ReferenceEngineError('Aborted', `session "${sessionId}" step ${step} on span ${key} was aborted`);
    const startTokens = held === undefined ? 0 : held.stepTokens.slice(0, step).reduce((a, b) => a + b, 0);
    if (startTokens + tokens > config.max_position_embeddings) {
      throw new ReferenceEngineError('ContextExceeded', `session "${sessionId}" would hold ${startTokens + tokens} tokens on span ${key}, past max_position_embeddings ${config.max_position_embeddings}`);
    }
    const cache = held ?? new SessionCache(sessionId, key, loaded.model.weights.layers.length, config.num_key_value_heads * config.head_dim);
    this.makeRoom(ck, cache.bytesAt(startTokens + tokens) - cache.bytes(), sessionId, key);
    if (held === undefined) this.caches.set(ck, cache);
    else {
      this.caches.delete(ck); // most recently used last
      this.caches.set(ck, cache);
      held.truncateToStep(step);
      if (held.ids.length > startTokens) {
        held.ids.length = startTokens;
        this.kvFeed.release(loaded.span.modelId, held.blocks, Math.floor(startTokens / KV_BLOCK_TOKENS));
      }
    }
    const before = cache.bytes();
    cache.reserve(startTokens + tokens);
    this.kvBytes += cache.bytes() - before;
    cache.busy++;
    try {
      const out = await forwardSpan(loaded.model, cache, input, async () => {
        await yieldToLoop();
        if (signal.aborted) throw new ReferenceEngineError('Aborted', `session "${sessionId}" step ${step} on span ${key} was aborted`);
      });
      cache.length = startTokens + tokens;
      cache.stepTokens.push(tokens);
      if ('ids' in input) {
        for (const id of input.ids) cache.ids.push(id);
        this.kvFeed.hold(loaded.span.modelId, cache.ids, cache.blocks);
      }
      return loaded.model.weights.norm === undefined ? f32Tensor(out, [tokens, config.hidden_size]) : f32Tensor(out, [1, config.vocab_size]);
    } finally {
      cache.busy--;
    }
  }

  /** Evicts idle caches, least recently used first, until `extra` more bytes fit the bound. */
  private makeRoom(current: string, extra: number, sessionId: string, key: string): void {
    if (this.kvBytes + extra <= this.kvBound) return;
    let idle = [...this.caches].filter(([k, c]) => k !== current && c.busy === 0);
    let freeable = 0;
    for (const [, c] of idle) freeable += c.bytes();
    if (this.kvBytes + extra - freeable > this.kvBound && this.unloadIdleSpans(current, key, extra)) {
      idle = [...this.caches].filter(([k, c]) => k !== current && c.busy === 0);
      freeable = 0;
      for (const [, c] of idle) freeable += c.bytes();
    }
    if (this.kvBytes + extra - freeable > this.kvBound) {
      const bound = this.kvFixed !== undefined ? `its ${this.kvBound} bytes (kvMemoryBytes)` : `the ${this.kvBound} bytes the plan gave it (memory ${this.memoryBytes} less the weights of its layers, ${this.plannedWeightBytes()})`;
      throw new ReferenceEngineError('KvMemoryExhausted', `session "${sessionId}" needs ${extra} more bytes of KV cache on span ${key}; the engine holds ${this.kvBytes} of ${bound} and can free only ${freeable}`);
    }
    for (const [k] of idle) {
      if (this.kvBytes + extra <= this.kvBound) break;
      this.dropOne(k);
    }
  }

  /**
   * When even every idle cache but `current` would not make room: lets go of spans other than
   * `key`, least recently stepped first, with no step running on them (their caches with them),
   * until `extra` more bytes could fit. A span a rebalance moved away is never stepped again, yet
   * its weights would keep counting against the KV bound; a span let go of and called again is
   * read again (the stage route loads before each step). Nothing goes if letting go of every such
   * span would not make room (the refusal changes nothing). False if none went.
   */
  private unloadIdleSpans(current: string, key: string, extra: number): boolean {
    if (this.kvFixed !== undefined) return false; // a fixed bound does not depend on the weights
    const idle = [...this.spans.keys()].filter((k) => k !== key && ![...this.caches.values()].some((c) => c.spanKey === k && c.busy > 0));
    const fits = (gone: ReadonlySet<string>): boolean => {
      let freeable = 0;
      for (const [ck, c] of this.caches) if (ck !== current && c.busy === 0) freeable += c.bytes(); // a span's caches go with it
      const bound = this.memoryBytes - this.plannedWeightBytes([...this.spans].filter(([k]) => !gone.has(k)).map(([, s]) => s));
      return this.kvBytes + extra - freeable <= bound;
    };
    if (idle.length === 0 || !fits(new Set(idle))) return false;
    const gone = new Set<string>();
    for (const k of idle) {
      gone.add(k);
      if (fits(gone)) break;
    }
    for (const [ck, c] of [...this.caches]) if (gone.has(c.spanKey)) this.dropOne(ck);
    for (const k of gone) this.spans.delete(k);
    this.kvBound = this.memoryBytes - this.plannedWeightBytes();
    return true;
  }

  private decodeInput(loaded: LoadedSpan, tensor: Tensor, sessionId: string, step: number): SpanInput {
    const { config } = loaded.model;
    const where = `session "${sessionId}" step ${step} on span ${spanKey(loaded.span)}`;
    if (elementsOf(tensor.shape) * (tensor.dtype === 'f16' || tensor.dtype === 'bf16' ? 2 : 4) !== tensor.data.byteLength) {
      throw new ReferenceEngineError('InvalidInput', `${where}: input of shape ${JSON.stringify(tensor.shape)} ${tensor.dtype} has ${tensor.data.byteLength} bytes`);
    }
    const view = new DataView(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
    if (loaded.span.layerStart === 0) {
      if (tensor.dtype !== 'i32' || tensor.shape.length !== 1 || (tensor.shape[0] as number) < 1) throw new ReferenceEngineError('InvalidInput', `${where}: the first stage takes token ids, i32 [tokens ≥ 1], got ${tensor.dtype} ${JSON.stringify(tensor.shape)}`);
      const ids = new Int32Array(tensor.shape[0] as number);
      for (let i = 0; i < ids.length; i++) {
        const id = view.getInt32(4 * i, true);
        if (id < 0 || id >= config.vocab_size) throw new ReferenceEngineError('InvalidInput', `${where}: token id ${id} at ${i} is outside the vocabulary [0, ${config.vocab_size})`);
        ids[i] = id;
      }
      return { ids };
    }
    if ((tensor.dtype !== 'f32' && tensor.dtype !== 'f16' && tensor.dtype !== 'bf16') || tensor.shape.length !== 2 || tensor.shape[1] !== config.hidden_size || (tensor.shape[0] as number) < 1) {
      throw new ReferenceEngineError('InvalidInput', `${where}: a later stage takes activations, f32 / f16 / bf16 [tokens ≥ 1, ${config.hidden_size}], got ${tensor.dtype} ${JSON.stringify(tensor.shape)}`);
    }
    const dtype = tensor.dtype === 'f32' ? 'F32' : tensor.dtype === 'f16' ? 'F16' : 'BF16';
    return { hidden: decodeElements(tensor.data, dtype), tokens: tensor.shape[0] as number };
  }

  /**
   * Drops the session's cache on `span`, then runs `inputs` as its steps 0, 1, … and returns their outputs.
   * @throws {ReferenceEngineError} as {@link ReferenceEngine.step}.
   */
  async rebuild(sessionId: string, span: StageSpan, inputs: readonly Tensor[], signal: AbortSignal): Promise<readonly Tensor[]> {
    const key = spanKey(span);
    const loaded = this.spans.get(key);
    if (loaded === undefined) throw new ReferenceEngineError('SpanNotLoaded', `span ${key} is not loaded (rebuilding session "${sessionId}")`);
    this.dropOne(cacheKey(key, sessionId));
    const outputs: Tensor[] = [];
    for (let step = 0; step < inputs.length; step++) outputs.push(await this.run(loaded, key, sessionId, step, inputs[step] as Tensor, signal));
    return outputs;
  }

  private dropOne(ck: string): boolean {
    const cache = this.caches.get(ck);
    if (cache === undefined) return false;
    this.caches.delete(ck);
    this.kvBytes -= cache.bytes();
    this.kvFeed.release(this.spans.get(cache.spanKey)?.span.modelId ?? '', cache.blocks);
    return true;
  }

  /** Drops every cache of `sessionId` on every span; false if it held none. */
  drop(sessionId: string): boolean {
    let any = false;
    for (const [ck, cache] of [...this.caches]) if (cache.sessionId === sessionId) any = this.dropOne(ck) || any;
    return any;
  }

  /** Sessions, cached tokens, and bytes held (weights as f32 plus KV buffers). */
  holds(): EngineHoldings {
    const sessions = new Set<string>();
    let cachedTokens = 0;
    for (const cache of this.caches.values()) {
      sessions.add(cache.sessionId);
      cachedTokens += cache.length;
    }
    let weights = 0;
    for (const { model } of this.spans.values()) weights += model.weights.bytes;
    return { sessions: sessions.size, cachedTokens, memoryBytes: weights + this.kvBytes, kvBytes: this.kvBytes, spans: [...this.spans.values()].map((s) => s.span) };
  }
}

/**
 * A model directory's hidden size, read at once (the engine's width is needed before it serves);
 * 1 for a config it cannot read or run, which `load` then refuses naming the field.
 */
function hiddenSizeOf(dir: string): number {
  try {
    return parseLlamaConfig(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')), join(dir, 'config.json')).hidden_size;
  } catch {
    return 1;
  }
}
