/**
 * Test support: a Hugging Face Llama model directory written as GGUF v3 (f32), as llama.cpp's
 * converter (`convert_hf_to_gguf.py`, LlamaModel) lays it out, so llama.cpp can run the same
 * weights as an independent check. q and k rows are permuted from HF's rotate-half layout to
 * llama.cpp's adjacent pairs; the vocabulary is a SentencePiece ("llama") one of `<unk>`, `<s>`,
 * `</s>` and the 256 byte tokens `<0x00>`…`<0xFF>`, the same ids as make-model's byte tokenizer.
 */
import { writeFile } from 'node:fs/promises';
import { readLlamaConfig, type LlamaConfig } from '../../src/model/config.js';
import { openModelWeights } from '../../src/model/model-weights.js';

/** GGUF metadata value types used here. */
const T = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9 } as const;
/** llama.cpp's token types. */
const TOKEN = { normal: 1, unknown: 2, control: 3, byte: 6 } as const;
const ALIGNMENT = 32;

type Value = { type: 'u32' | 'i32' | 'f32'; value: number } | { type: 'bool'; value: boolean } | { type: 'string'; value: string } | { type: 'strings'; value: readonly string[] } | { type: 'f32s' | 'i32s'; value: readonly number[] };

/** A growable little-endian byte buffer. */
class Bytes {
  private chunks: Uint8Array[] = [];
  length = 0;
  push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.length += bytes.byteLength;
  }
  private fixed(size: number, write: (view: DataView) => void): void {
    const b = new Uint8Array(size);
    write(new DataView(b.buffer));
    this.push(b);
  }
  u32(v: number): void { this.fixed(4, (d) => d.setUint32(0, v, true)); }
  i32(v: number): void { this.fixed(4, (d) => d.setInt32(0, v, true)); }
  u64(v: number): void { this.fixed(8, (d) => d.setBigUint64(0, BigInt(v), true)); }
  f32(v: number): void { this.fixed(4, (d) => d.setFloat32(0, v, true)); }
  string(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u64(b.byteLength);
    this.push(b);
  }
  pad(to: number): void {
    const rest = (to - (this.length % to)) % to;
    if (rest > 0) this.push(new Uint8Array(rest));
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out;
  }
}

function writeValue(out: Bytes, v: Value): void {
  switch (v.type) {
    case 'u32': out.u32(T.u32); out.u32(v.value); break;
    case 'i32': out.u32(T.i32); out.i32(v.value); break;
    case 'f32': out.u32(T.f32); out.f32(v.value); break;
    case 'bool': out.u32(T.bool); out.push(Uint8Array.of(v.value ? 1 : 0)); break;
    case 'string': out.u32(T.string); out.string(v.value); break;
    case 'strings': out.u32(T.array); out.u32(T.string); out.u64(v.value.length); for (const s of v.value) out.string(s); break;
    case 'f32s': out.u32(T.array); out.u32(T.f32); out.u64(v.value.length); for (const x of v.value) out.f32(x); break;
    case 'i32s': out.u32(T.array); out.u32(T.i32); out.u64(v.value.length); for (const x of v.value) out.i32(x); break;
  }
}

/**
 * Reorders the rows of a q or k projection (`[heads·d, in]`) from HF's rotate-half layout (each
 * head's first d/2 rows rotate with its last d/2) to the interleaved one llama.cpp rotates
 * (rows 2j and 2j+1 pair): row `h·d + 2j + s` of the result is row `h·d + s·d/2 + j` of the input.
 */
export function permuteForRotary(rows: Float32Array, heads: number, inDim: number): Float32Array {
  const d = rows.length / inDim / heads;
  const half = d / 2;
  const out = new Float32Array(rows.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < half; j++) {
      for (let s = 0; s < 2; s++) {
        const from = (h * d + s * half + j) * inDim;
        out.set(rows.subarray(from, from + inDim), (h * d + 2 * j + s) * inDim);
      }
    }
  }
  return out;
}

/** The vocabulary: 3 specials then the 256 byte tokens, padded with unused tokens to the model's vocab size. */
function vocabulary(config: LlamaConfig): { tokens: string[]; types: number[] } {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types: number[] = [TOKEN.unknown, TOKEN.control, TOKEN.control];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TOKEN.byte);
  }
  for (let i = tokens.length; i < config.vocab_size; i++) {
    tokens.push(`<extra_${i}>`);
    types.push(TOKEN.normal);
  }
  return { tokens, types };
}

/**
 * Writes the model directory `dir` as an f32 GGUF v3 file at `path`.
 * @returns the config read.
 */
export async function writeGguf(dir: string, path: string): Promise<LlamaConfig> {
  const config = await readLlamaConfig(dir);
  const weights = await openModelWeights(dir);
  const { tokens, types } = vocabulary(config);
  const h = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  const f = config.intermediate_size;
  const meta: [string, Value][] = [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: 'hecate make-model' }],
    ['general.alignment', { type: 'u32', value: ALIGNMENT }],
    ['general.file_type', { type: 'u32', value: 0 }],
    ['llama.vocab_size', { type: 'u32', value: config.vocab_size }],
    ['llama.context_length', { type: 'u32', value: config.max_position_embeddings }],
    ['llama.embedding_length', { type: 'u32', value: h }],
    ['llama.block_count', { type: 'u32', value: config.num_hidden_layers }],
    ['llama.feed_forward_length', { type: 'u32', value: f }],
    ['llama.rope.dimension_count', { type: 'u32', value: config.head_dim }],
    ['llama.rope.freq_base', { type: 'f32', value: config.rope_theta }],
    ['llama.attention.head_count', { type: 'u32', value: config.num_attention_heads }],
    ['llama.attention.head_count_kv', { type: 'u32', value: config.num_key_value_heads }],
    ['llama.attention.key_length', { type: 'u32', value: config.head_dim }],
    ['llama.attention.value_length', { type: 'u32', value: config.head_dim }],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'f32', value: config.rms_norm_eps }],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'strings', value: tokens }],
    ['tokenizer.ggml.scores', { type: 'f32s', value: tokens.map(() => 0) }],
    ['tokenizer.ggml.token_type', { type: 'i32s', value: types }],
    ['tokenizer.ggml.unknown_token_id', { type: 'u32', value: 0 }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: 1 }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: 2 }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
  ];
  // [gguf name, HF name, HF shape [out, in], permute heads or 0]
  const plan: [string, string, number[], number][] = [['token_embd.weight', 'model.embed_tokens.weight', [config.vocab_size, h], 0]];
  for (let l = 0; l < config.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    plan.push(
      [`blk.${l}.attn_norm.weight`, `${p}.input_layernorm.weight`, [h], 0],
      [`blk.${l}.attn_q.weight`, `${p}.self_attn.q_proj.weight`, [q, h], config.num_attention_heads],
      [`blk.${l}.attn_k.weight`, `${p}.self_attn.k_proj.weight`, [kv, h], config.num_key_value_heads],
      [`blk.${l}.attn_v.weight`, `${p}.self_attn.v_proj.weight`, [kv, h], 0],
      [`blk.${l}.attn_output.weight`, `${p}.self_attn.o_proj.weight`, [h, q], 0],
      [`blk.${l}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`, [h], 0],
      [`blk.${l}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`, [f, h], 0],
      [`blk.${l}.ffn_up.weight`, `${p}.mlp.up_proj.weight`, [f, h], 0],
      [`blk.${l}.ffn_down.weight`, `${p}.mlp.down_proj.weight`, [h, f], 0],
    );
  }
  plan.push(['output_norm.weight', 'model.norm.weight', [h], 0]);
  if (!config.tie_word_embeddings) plan.push(['output.weight', 'lm_head.weight', [config.vocab_size, h], 0]);

  const head = new Bytes();
  head.push(new TextEncoder().encode('GGUF'));
  head.u32(3);
  head.u64(plan.length);
  head.u64(meta.length);
  for (const [key, value] of meta) {
    head.string(key);
    writeValue(head, value);
  }
  const data = new Bytes();
  for (const [name, hf, shape, heads] of plan) {
    let values = await weights.read(hf, shape);
    if (heads > 0) values = permuteForRotary(values, heads, shape[1] as number);
    data.pad(ALIGNMENT);
    head.string(name);
    head.u32(shape.length);
    for (const d of [...shape].reverse()) head.u64(d); // ggml's ne[0] is the innermost (HF's last) dimension
    head.u32(0); // GGML_TYPE_F32
    head.u64(data.length);
    data.push(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  }
  head.pad(ALIGNMENT);
  const out = new Uint8Array(head.length + data.length);
  out.set(head.bytes(), 0);
  out.set(data.bytes(), head.length);
  await writeFile(path, out);
  return config;
}
