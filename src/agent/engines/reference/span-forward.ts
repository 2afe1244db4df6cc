/**
 * One step of one session through one span's layers: embeddings on the first stage, each decoder
 * layer (RMSNorm → q, k, v → rotary → grouped-query attention over the session's cache → o, the
 * residual; RMSNorm → SwiGLU MLP, the residual), and on the last stage the final norm and LM head
 * of the last token. Each token's row is computed by the same per-row kernels in the same order
 * whatever the step's token count (docs/engine-reference.md).
 */
import type { LlamaConfig } from '../../../model/config.js';
import { applyRotary, attendRow, rmsNorm, rotaryRow, swiGlu, type AttentionShape, type RotaryRow } from './llama-kernels.js';
import type { SessionCache } from './session-cache.js';
import type { SpanWeights } from './span-weights.js';

/** A loaded span: the config, its weights, the rotary frequencies and the rows computed so far. */
export interface SpanModel {
  readonly config: LlamaConfig;
  readonly weights: SpanWeights;
  readonly inverseFrequencies: Float64Array;
  /** Rotary rows by position, computed once each. */
  readonly rotary: RotaryRow[];
}

/** What a step starts from: token ids (first stage) or the previous stage's rows `[tokens, hidden]`. */
export type SpanInput = { readonly ids: Int32Array } | { readonly hidden: Float32Array; readonly tokens: number };

/** The rotary row of `position`, cached on the span. */
function rotaryAt(model: SpanModel, position: number): RotaryRow {
  let row = model.rotary[position];
  if (row === undefined) {
    row = rotaryRow(position, model.inverseFrequencies);
    model.rotary[position] = row;
  }
  return row;
}

/** The residual rows a step starts from: embedding rows, or a copy of the previous stage's. */
function initialRows(model: SpanModel, input: SpanInput): { x: Float32Array; tokens: number } {
  const h = model.config.hidden_size;
  if ('hidden' in input) return { x: Float32Array.from(input.hidden), tokens: input.tokens };
  const { kernels, embed } = model.weights;
  const x = new Float32Array(input.ids.length * h);
  for (let t = 0; t < input.ids.length; t++) kernels.row(embed!, input.ids[t] as number, x, t * h);
  return { x, tokens: input.ids.length };
}

/**
 * Runs `input` through the span, writing its keys and values at positions `cache.length…` (the
 * caller advances `cache.length` once every layer is done, so an abort leaves it as it was).
 * `between` runs after each layer (to yield and check the signal).
 * @returns the rows `[tokens, hidden]` after the span, or (last stage) the last token's logits `[vocab]`.
 */
export async function forwardSpan(model: SpanModel, cache: SessionCache, input: SpanInput, between: () => Promise<void>): Promise<Float32Array> {
  const c = model.config;
  const h = c.hidden_size;
  const qDim = c.num_attention_heads * c.head_dim;
  const kvDim = c.num_key_value_heads * c.head_dim;
  const f = c.intermediate_size;
  const shape: AttentionShape = { heads: c.num_attention_heads, kvHeads: c.num_key_value_heads, headDim: c.head_dim };
  const { kernels } = model.weights;
  const { x, tokens } = initialRows(model, input);
  const start = cache.length;
  const normed = new Float32Array(h);
  const q = new Float32Array(tokens * qDim);
  const attended = new Float32Array(qDim);
  const delta = new Float32Array(h);
  const gate = new Float32Array(f);
  const up = new Float32Array(f);
  const scores = new Float64Array(start + tokens);
  for (let l = 0; l < model.weights.layers.length; l++) {
    const w = model.weights.layers[l]!;
    const keys = cache.keys[l] as Float32Array;
    const values = cache.values[l] as Float32Array;
    for (let t = 0; t < tokens; t++) {
      const position = start + t;
      rmsNorm(x, t * h, w.inputNorm, c.rms_norm_eps, normed, 0);
      kernels.matVec(w.q, normed, 0, q, t * qDim);
      kernels.matVec(w.k, normed, 0, keys, position * kvDim);
      kernels.matVec(w.v, normed, 0, values, position * kvDim);
      const rotary = rotaryAt(model, position);
      applyRotary(q, t * qDim, c.num_attention_heads, c.head_dim, rotary);
      applyRotary(keys, position * kvDim, c.num_key_value_heads, c.head_dim, rotary);
    }
    for (let t = 0; t < tokens; t++) {
      attendRow(q, t * qDim, keys, values, start + t + 1, shape, scores, attended, 0);
      kernels.matVec(w.o, attended, 0, delta, 0);
      for (let i = 0; i < h; i++) x[t * h + i] = (x[t * h + i] as number) + (delta[i] as number);
      rmsNorm(x, t * h, w.postNorm, c.rms_norm_eps, normed, 0);
      kernels.matVec(w.gate, normed, 0, gate, 0);
      kernels.matVec(w.up, normed, 0, up, 0);
      swiGlu(gate, up, f);
      kernels.matVec(w.down, gate, 0, delta, 0);
      for (let i = 0; i < h; i++) x[t * h + i] = (x[t * h + i] as number) + (delta[i] as number);
    }
    await between();
  }
  const { norm, lmHead } = model.weights;
  if (norm === undefined || lmHead === undefined) return x;
  rmsNorm(x, (tokens - 1) * h, norm, c.rms_norm_eps, normed, 0);
  const logits = new Float32Array(c.vocab_size);
  kernels.matVec(lmHead, normed, 0, logits, 0);
  return logits;
}
