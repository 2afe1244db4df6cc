/**
 * The weights of one span, read from a model directory: only its own layers' tensors, plus the
 * embeddings on the first stage and the final norm and LM head on the last (the embeddings again
 * when tied). Everything is widened to f32; the matrices are copied into the engine's WebAssembly
 * memory, the norms stay JavaScript arrays (docs/engine-reference.md).
 */
import type { LlamaConfig } from '../../../model/config.js';
import type { ModelWeights } from '../../../model/model-weights.js';
import type { WasmKernels, WasmMatrix } from './wasm-kernels.js';

/** One decoder layer's matrices (row-major `[out, in]`) and norms. */
export interface LayerWeights {
  readonly inputNorm: Float32Array;
  readonly q: WasmMatrix;
  readonly k: WasmMatrix;
  readonly v: WasmMatrix;
  readonly o: WasmMatrix;
  readonly postNorm: Float32Array;
  readonly gate: WasmMatrix;
  readonly up: WasmMatrix;
  readonly down: WasmMatrix;
}

/** A span's weights. */
export interface SpanWeights {
  /** The memory holding the matrices, and their product. */
  readonly kernels: WasmKernels;
  /** `[vocab, hidden]`, on the first stage. */
  readonly embed: WasmMatrix | undefined;
  readonly layers: readonly LayerWeights[];
  /** The final norm, on the last stage. */
  readonly norm: Float32Array | undefined;
  /** `[vocab, hidden]`, on the last stage (the embeddings' array when tied). */
  readonly lmHead: WasmMatrix | undefined;
  /** Bytes of f32 held (a tied head shared with the embeddings counted once). */
  readonly bytes: number;
}

/** Reads the weights of layers `[start, end)` of a model of `config` into `kernels`' memory. */
export async function loadSpanWeights(weights: ModelWeights, config: LlamaConfig, start: number, end: number, kernels: WasmKernels): Promise<SpanWeights> {
  const h = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  const f = config.intermediate_size;
  const first = start === 0;
  const last = end === config.num_hidden_layers;
  let normBytes = 0;
  const matrix = async (name: string, rows: number, cols: number) => kernels.store(await weights.read(name, [rows, cols]), rows, cols, `tensor "${name}"`);
  const norm = async (name: string) => {
    const values = await weights.read(name, [h]);
    normBytes += values.byteLength;
    return values;
  };
  const embed = first || (last && config.tie_word_embeddings) ? await matrix('model.embed_tokens.weight', config.vocab_size, h) : undefined;
  const layers: LayerWeights[] = [];
  for (let l = start; l < end; l++) {
    const p = `model.layers.${l}`;
    layers.push({
      inputNorm: await norm(`${p}.input_layernorm.weight`),
      q: await matrix(`${p}.self_attn.q_proj.weight`, q, h),
      k: await matrix(`${p}.self_attn.k_proj.weight`, kv, h),
      v: await matrix(`${p}.self_attn.v_proj.weight`, kv, h),
      o: await matrix(`${p}.self_attn.o_proj.weight`, h, q),
      postNorm: await norm(`${p}.post_attention_layernorm.weight`),
      gate: await matrix(`${p}.mlp.gate_proj.weight`, f, h),
      up: await matrix(`${p}.mlp.up_proj.weight`, f, h),
      down: await matrix(`${p}.mlp.down_proj.weight`, h, f),
    });
  }
  const finalNorm = last ? await norm('model.norm.weight') : undefined;
  const lmHead = !last ? undefined : config.tie_word_embeddings ? embed : await matrix('lm_head.weight', config.vocab_size, h);
  return { kernels, embed: first ? embed : undefined, layers, norm: finalNorm, lmHead, bytes: kernels.matrixBytes + normBytes };
}
