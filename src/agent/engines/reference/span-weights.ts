/**
 * The weights of one span, read from a model directory: only its own layers' tensors, plus the
 * embeddings on the first stage and the final norm and LM head on the last (the embeddings again
 * when tied). Everything is widened to f32 (docs/engine-reference.md).
 */
import type { LlamaConfig } from '../../../model/config.js';
import type { ModelWeights } from '../../../model/model-weights.js';

/** One decoder layer's matrices (row-major `[out, in]`) and norms. */
export interface LayerWeights {
  readonly inputNorm: Float32Array;
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array;
  readonly o: Float32Array;
  readonly postNorm: Float32Array;
  readonly gate: Float32Array;
  readonly up: Float32Array;
  readonly down: Float32Array;
}

/** A span's weights. */
export interface SpanWeights {
  /** `[vocab, hidden]`, on the first stage. */
  readonly embed: Float32Array | undefined;
  readonly layers: readonly LayerWeights[];
  /** The final norm, on the last stage. */
  readonly norm: Float32Array | undefined;
  /** `[vocab, hidden]`, on the last stage (the embeddings' array when tied). */
  readonly lmHead: Float32Array | undefined;
  /** Bytes of f32 held (a tied head shared with the embeddings counted once). */
  readonly bytes: number;
}

/** Reads the weights of layers `[start, end)` of a model of `config`. */
export async function loadSpanWeights(weights: ModelWeights, config: LlamaConfig, start: number, end: number): Promise<SpanWeights> {
  const h = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  const f = config.intermediate_size;
  const first = start === 0;
  const last = end === config.num_hidden_layers;
  const embedShape = [config.vocab_size, h];
  const embed = first || (last && config.tie_word_embeddings) ? await weights.read('model.embed_tokens.weight', embedShape) : undefined;
  const layers: LayerWeights[] = [];
  for (let l = start; l < end; l++) {
    const p = `model.layers.${l}`;
    layers.push({
      inputNorm: await weights.read(`${p}.input_layernorm.weight`, [h]),
      q: await weights.read(`${p}.self_attn.q_proj.weight`, [q, h]),
      k: await weights.read(`${p}.self_attn.k_proj.weight`, [kv, h]),
      v: await weights.read(`${p}.self_attn.v_proj.weight`, [kv, h]),
      o: await weights.read(`${p}.self_attn.o_proj.weight`, [h, q]),
      postNorm: await weights.read(`${p}.post_attention_layernorm.weight`, [h]),
      gate: await weights.read(`${p}.mlp.gate_proj.weight`, [f, h]),
      up: await weights.read(`${p}.mlp.up_proj.weight`, [f, h]),
      down: await weights.read(`${p}.mlp.down_proj.weight`, [h, f]),
    });
  }
  const norm = last ? await weights.read('model.norm.weight', [h]) : undefined;
  const lmHead = !last ? undefined : config.tie_word_embeddings ? embed : await weights.read('lm_head.weight', embedShape);
  let bytes = (embed?.byteLength ?? 0) + (norm?.byteLength ?? 0) + (lmHead !== undefined && lmHead !== embed ? lmHead.byteLength : 0);
  for (const layer of layers) for (const array of Object.values(layer) as Float32Array[]) bytes += array.byteLength;
  return { embed: first ? embed : undefined, layers, norm, lmHead, bytes };
}
