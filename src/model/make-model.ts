/**
 * A deterministic random-weight Llama model directory, exactly as a Hugging Face model ships
 * (`config.json`, `model.safetensors` or shards with an index, `tokenizer.json`,
 * `tokenizer_config.json`), for the tests, the walkthrough and the benches. Same options and seed →
 * same bytes. Weights are scaled so the next-token distribution is peaked (greedy rarely ties).
 */
import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mulberry32 } from '../core/random.js';
import { byteLevelTokenizerConfigJson, byteLevelTokenizerJson, BYTE_TOKENIZER_SIZE } from './byte-tokenizer-files.js';
import { parseLlamaConfig, type LlamaConfig } from './config.js';
import { ModelError } from './model-error.js';
import type { SafetensorsDtype } from './safetensors.js';
import { encodeElements, safetensorsHeaderBytes, type TensorSpec } from './safetensors-writer.js';

/** The weight dtypes make-model writes. */
export type MakeModelDtype = 'f32' | 'f16' | 'bf16';

/** Shapes, seed and layout of a generated model. */
export interface MakeModelOptions {
  /** @defaultValue 4 */
  readonly layers?: number;
  /** @defaultValue 64 */
  readonly hidden?: number;
  /** @defaultValue 4 */
  readonly heads?: number;
  /** @defaultValue 2 */
  readonly kvHeads?: number;
  /** @defaultValue 160 */
  readonly intermediate?: number;
  /** At least the tokenizer's 259 tokens. @defaultValue 259 */
  readonly vocab?: number;
  /** @defaultValue 1 */
  readonly seed?: number;
  /** @defaultValue 'f32' */
  readonly dtype?: MakeModelDtype;
  /** LM head tied to the embeddings (no `lm_head.weight`). @defaultValue false */
  readonly tie?: boolean;
  /** Shards of the weights; more than 1 writes `model-0000i-of-0000n.safetensors` and an index. @defaultValue 1 */
  readonly shards?: number;
  /** @defaultValue 10000 */
  readonly ropeTheta?: number;
  /** @defaultValue 2048 */
  readonly maxPositions?: number;
}

const SAFETENSORS_DTYPE: Readonly<Record<MakeModelDtype, SafetensorsDtype>> = { f32: 'F32', f16: 'F16', bf16: 'BF16' };
const TORCH_DTYPE = { f32: 'float32', f16: 'float16', bf16: 'bfloat16' } as const;

function positive(value: number, name: string, min = 1): number {
  if (!Number.isInteger(value) || value < min) throw new ModelError('InvalidOptions', `make-model: --${name} must be an integer ≥ ${min}, got ${value}`);
  return value;
}

/** The `config.json` object make-model writes for `options`. */
export function makeModelConfigJson(options: MakeModelOptions = {}): Record<string, unknown> {
  const hidden = positive(options.hidden ?? 64, 'hidden');
  const heads = positive(options.heads ?? 4, 'heads');
  const kvHeads = positive(options.kvHeads ?? 2, 'kv-heads');
  if (hidden % heads !== 0 || (hidden / heads) % 2 !== 0) throw new ModelError('InvalidOptions', `make-model: --hidden (${hidden}) must be --heads (${heads}) × an even head size`);
  if (heads % kvHeads !== 0) throw new ModelError('InvalidOptions', `make-model: --kv-heads (${kvHeads}) must divide --heads (${heads})`);
  const dtype = options.dtype ?? 'f32';
  if (!(dtype in SAFETENSORS_DTYPE)) throw new ModelError('InvalidOptions', `make-model: --dtype must be f32, f16 or bf16, got ${JSON.stringify(dtype)}`);
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: hidden,
    num_hidden_layers: positive(options.layers ?? 4, 'layers'),
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: hidden / heads,
    intermediate_size: positive(options.intermediate ?? 160, 'intermediate'),
    vocab_size: positive(options.vocab ?? BYTE_TOKENIZER_SIZE, 'vocab', BYTE_TOKENIZER_SIZE),
    rms_norm_eps: 1e-5,
    rope_theta: options.ropeTheta ?? 10000,
    rope_scaling: null,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: options.tie ?? false,
    torch_dtype: TORCH_DTYPE[dtype],
    max_position_embeddings: positive(options.maxPositions ?? 2048, 'max-positions'),
    bos_token_id: 1,
    eos_token_id: 2,
  };
}

/** A tensor make-model writes: its spec and the half-width of its uniform draw (or a norm's 1 ± spread). */
interface Generated extends TensorSpec {
  readonly scale: number;
  readonly norm: boolean;
}

/** Every tensor of the model, in file order, with how its values are drawn. */
function tensorsOf(config: LlamaConfig, dtype: SafetensorsDtype): Generated[] {
  const h = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  const f = config.intermediate_size;
  // Uniform on [-a, a] has standard deviation a/√3: a = √3·σ. σ = gain/√fan_in keeps each
  // projection's output near unit scale; the LM head's gain of 3 gives logits of σ ≈ 3, peaked.
  const u = (gain: number, fanIn: number) => (Math.sqrt(3) * gain) / Math.sqrt(fanIn);
  const head = u(3, h);
  const out: Generated[] = [{ name: 'model.embed_tokens.weight', dtype, shape: [config.vocab_size, h], scale: config.tie_word_embeddings ? head : Math.sqrt(3), norm: false }];
  for (let l = 0; l < config.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    out.push(
      { name: `${p}.input_layernorm.weight`, dtype, shape: [h], scale: 0.1, norm: true },
      { name: `${p}.self_attn.q_proj.weight`, dtype, shape: [q, h], scale: u(1.5, h), norm: false },
      { name: `${p}.self_attn.k_proj.weight`, dtype, shape: [kv, h], scale: u(1.5, h), norm: false },
      { name: `${p}.self_attn.v_proj.weight`, dtype, shape: [kv, h], scale: u(1, h), norm: false },
      { name: `${p}.self_attn.o_proj.weight`, dtype, shape: [h, q], scale: u(0.7, q), norm: false },
      { name: `${p}.post_attention_layernorm.weight`, dtype, shape: [h], scale: 0.1, norm: true },
      { name: `${p}.mlp.gate_proj.weight`, dtype, shape: [f, h], scale: u(1, h), norm: false },
      { name: `${p}.mlp.up_proj.weight`, dtype, shape: [f, h], scale: u(1, h), norm: false },
      { name: `${p}.mlp.down_proj.weight`, dtype, shape: [h, f], scale: u(0.7, f), norm: false },
    );
  }
  out.push({ name: 'model.norm.weight', dtype, shape: [h], scale: 0.1, norm: true });
  if (!config.tie_word_embeddings) out.push({ name: 'lm_head.weight', dtype, shape: [config.vocab_size, h], scale: head, norm: false });
  return out;
}

/** Draws one tensor's values from the model's stream. */
function draw(tensor: Generated, next: () => number): Float32Array {
  const n = tensor.shape.reduce((a, b) => a * b, 1);
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const centred = (next() / 4294967296) * 2 - 1; // [-1, 1)
    values[i] = tensor.norm ? 1 + tensor.scale * centred : tensor.scale * centred;
  }
  return values;
}

/** What make-model wrote. */
export interface MadeModel {
  readonly dir: string;
  readonly config: LlamaConfig;
  /** The files written, relative to `dir`, in the order written. */
  readonly files: readonly string[];
  /** Bytes of tensor data written. */
  readonly weightBytes: number;
}

/**
 * Writes a random-weight Llama model directory to `dir` (created if absent; files overwritten).
 * @throws {ModelError} `InvalidOptions` for shapes that do not fit (see {@link MakeModelOptions}).
 * @example await makeModel('/tmp/tiny', { layers: 4, hidden: 64, seed: 7 });
 */
export async function makeModel(dir: string, options: MakeModelOptions = {}): Promise<MadeModel> {
  const configJson = makeModelConfigJson(options);
  const config = parseLlamaConfig(configJson, 'make-model');
  const dtype = SAFETENSORS_DTYPE[options.dtype ?? 'f32'];
  const tensors = tensorsOf(config, dtype);
  const shards = positive(options.shards ?? 1, 'shards');
  if (shards > tensors.length) throw new ModelError('InvalidOptions', `make-model: --shards (${shards}) exceeds the ${tensors.length} tensors`);
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  const next = mulberry32(options.seed ?? 1);
  const per = Math.ceil(tensors.length / shards);
  const weightMap: Record<string, string> = {};
  let weightBytes = 0;
  for (let s = 0; s < shards; s++) {
    const group = tensors.slice(s * per, (s + 1) * per);
    const file = shards === 1 ? 'model.safetensors' : `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const handle = await open(join(dir, file), 'w');
    try {
      await handle.write(safetensorsHeaderBytes(group, { format: 'pt' }));
      for (const tensor of group) {
        const bytes = encodeElements(draw(tensor, next), tensor.dtype);
        await handle.write(bytes);
        weightBytes += bytes.byteLength;
        weightMap[tensor.name] = file;
      }
    } finally {
      await handle.close();
    }
    files.push(file);
  }
  if (shards > 1) {
    await writeFile(join(dir, 'model.safetensors.index.json'), `${JSON.stringify({ metadata: { total_size: weightBytes }, weight_map: weightMap }, null, 2)}\n`);
    files.push('model.safetensors.index.json');
  }
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(configJson, null, 2)}\n`);
  await writeFile(join(dir, 'tokenizer.json'), `${JSON.stringify(byteLevelTokenizerJson(), null, 2)}\n`);
  await writeFile(join(dir, 'tokenizer_config.json'), `${JSON.stringify(byteLevelTokenizerConfigJson(config.max_position_embeddings), null, 2)}\n`);
  files.push('config.json', 'tokenizer.json', 'tokenizer_config.json');
  return { dir, config, files, weightBytes };
}
