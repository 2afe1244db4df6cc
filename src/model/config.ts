/**
 * A Hugging Face `config.json` for `LlamaForCausalLM`, read and validated, and the sizes a plan
 * needs from it (a layer's bytes, the KV cache's bytes per token). Anything the reference engine
 * does not implement is refused here, naming the field (docs/engine-reference.md).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelError } from './model-error.js';

/** The weight dtypes a model directory may hold, as `torch_dtype` names them. */
export type TorchDtype = 'float32' | 'float16' | 'bfloat16';

/** Bytes one element of each {@link TorchDtype} takes. */
export const TORCH_DTYPE_BYTES: Readonly<Record<TorchDtype, number>> = { float32: 4, float16: 2, bfloat16: 2 };

/** A validated Llama config, the fields named as `config.json` names them. */
export interface LlamaConfig {
  readonly architecture: 'LlamaForCausalLM';
  readonly hidden_size: number;
  readonly num_hidden_layers: number;
  readonly num_attention_heads: number;
  readonly num_key_value_heads: number;
  /** Given or `hidden_size / num_attention_heads`. */
  readonly head_dim: number;
  readonly intermediate_size: number;
  readonly vocab_size: number;
  readonly rms_norm_eps: number;
  readonly rope_theta: number;
  readonly tie_word_embeddings: boolean;
  readonly torch_dtype: TorchDtype;
  readonly max_position_embeddings: number;
  readonly bos_token_id?: number;
  readonly eos_token_id?: number;
}

type Json = Record<string, unknown>;

function positiveInteger(raw: Json, field: string, where: string): number {
  const value = raw[field];
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new ModelError('InvalidConfig', `${where}: "${field}" must be a positive integer, got ${JSON.stringify(value) ?? 'nothing'}`);
  }
  return value;
}

function positiveNumber(raw: Json, field: string, where: string, fallback?: number): number {
  const value = raw[field] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ModelError('InvalidConfig', `${where}: "${field}" must be a positive number, got ${JSON.stringify(value) ?? 'nothing'}`);
  }
  return value;
}

function optionalId(raw: Json, field: string, where: string): number | undefined {
  const value = raw[field];
  if (value === undefined || value === null) return undefined;
  const first = Array.isArray(value) ? value[0] : value; // Llama 3 lists several eos ids: the first is the one written
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 0) throw new ModelError('InvalidConfig', `${where}: "${field}" must be a token id, got ${JSON.stringify(value)}`);
  return first;
}

function refuseTrue(raw: Json, field: string, where: string): void {
  if (raw[field] !== undefined && raw[field] !== false && raw[field] !== null) {
    throw new ModelError('UnsupportedConfig', `${where}: "${field}" is ${JSON.stringify(raw[field])}; the reference engine implements Llama without biases (false or absent)`);
  }
}

/**
 * Validates a parsed `config.json`; `where` names it in messages.
 * @throws {ModelError} `InvalidConfig` for a missing or malformed field, `UnsupportedConfig` for
 *   another architecture, a `rope_scaling`, biases or an activation other than SiLU.
 */
export function parseLlamaConfig(raw: unknown, where = 'config.json'): LlamaConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ModelError('InvalidConfig', `${where}: must be a JSON object`);
  const json = raw as Json;
  const architectures = json['architectures'];
  if (!Array.isArray(architectures) || architectures.length !== 1 || architectures[0] !== 'LlamaForCausalLM') {
    throw new ModelError('UnsupportedConfig', `${where}: "architectures" is ${JSON.stringify(architectures) ?? 'absent'}; the reference engine runs ["LlamaForCausalLM"] only`);
  }
  if (json['model_type'] !== undefined && json['model_type'] !== 'llama') {
    throw new ModelError('UnsupportedConfig', `${where}: "model_type" is ${JSON.stringify(json['model_type'])}; the reference engine runs "llama" only`);
  }
  if (json['rope_scaling'] !== undefined && json['rope_scaling'] !== null) {
    throw new ModelError('UnsupportedConfig', `${where}: "rope_scaling" is ${JSON.stringify(json['rope_scaling'])}; the reference engine implements unscaled rotary embeddings only (null or absent)`);
  }
  const act = json['hidden_act'];
  if (act !== undefined && act !== 'silu') throw new ModelError('UnsupportedConfig', `${where}: "hidden_act" is ${JSON.stringify(act)}; the reference engine implements "silu" only`);
  refuseTrue(json, 'attention_bias', where);
  refuseTrue(json, 'mlp_bias', where);
  const hidden = positiveInteger(json, 'hidden_size', where);
  const heads = positiveInteger(json, 'num_attention_heads', where);
  const kvHeads = json['num_key_value_heads'] === undefined ? heads : positiveInteger(json, 'num_key_value_heads', where);
  if (heads % kvHeads !== 0) throw new ModelError('InvalidConfig', `${where}: "num_key_value_heads" (${kvHeads}) must divide "num_attention_heads" (${heads})`);
  let headDim: number;
  if (json['head_dim'] === undefined || json['head_dim'] === null) {
    if (hidden % heads !== 0) throw new ModelError('InvalidConfig', `${where}: "hidden_size" (${hidden}) is not a multiple of "num_attention_heads" (${heads}) and no "head_dim" is given`);
    headDim = hidden / heads;
  } else headDim = positiveInteger(json, 'head_dim', where);
  if (headDim % 2 !== 0) throw new ModelError('InvalidConfig', `${where}: "head_dim" (${headDim}) must be even for rotary embeddings`);
  const dtype = json['torch_dtype'] ?? 'float32';
  if (dtype !== 'float32' && dtype !== 'float16' && dtype !== 'bfloat16') {
    throw new ModelError('UnsupportedConfig', `${where}: "torch_dtype" is ${JSON.stringify(dtype)}; expected "float32", "float16" or "bfloat16"`);
  }
  const tie = json['tie_word_embeddings'] ?? false;
  if (typeof tie !== 'boolean') throw new ModelError('InvalidConfig', `${where}: "tie_word_embeddings" must be a boolean, got ${JSON.stringify(tie)}`);
  const bos = optionalId(json, 'bos_token_id', where);
  const eos = optionalId(json, 'eos_token_id', where);
  return {
    architecture: 'LlamaForCausalLM',
    hidden_size: hidden,
    num_hidden_layers: positiveInteger(json, 'num_hidden_layers', where),
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    intermediate_size: positiveInteger(json, 'intermediate_size', where),
    vocab_size: positiveInteger(json, 'vocab_size', where),
    rms_norm_eps: positiveNumber(json, 'rms_norm_eps', where, 1e-6),
    rope_theta: positiveNumber(json, 'rope_theta', where, 10000),
    tie_word_embeddings: tie,
    torch_dtype: dtype,
    max_position_embeddings: positiveInteger(json, 'max_position_embeddings', where),
    ...(bos === undefined ? {} : { bos_token_id: bos }),
    ...(eos === undefined ? {} : { eos_token_id: eos }),
  };
}

/**
 * Reads and validates `DIR/config.json`.
 * @throws {ModelError} `InvalidFile` when it cannot be read or parsed; see {@link parseLlamaConfig}.
 */
export async function readLlamaConfig(dir: string): Promise<LlamaConfig> {
  const path = join(dir, 'config.json');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ModelError('InvalidFile', `${path}: cannot be read (${(error as Error).message})`, { cause: error });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ModelError('InvalidFile', `${path}: is not JSON (${(error as Error).message})`, { cause: error });
  }
  return parseLlamaConfig(raw, path);
}

/** Parameters of one decoder layer: q, k, v, o projections, the three MLP matrices and two norms. */
export function layerParameters(config: LlamaConfig): number {
  const h = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  return h * q + 2 * h * kv + q * h + 3 * h * config.intermediate_size + 2 * h;
}

/** Bytes of one decoder layer's weights as the directory stores them (`torch_dtype`), or at `bytesPerElement`. */
export function layerBytes(config: LlamaConfig, bytesPerElement = TORCH_DTYPE_BYTES[config.torch_dtype]): number {
  return layerParameters(config) * bytesPerElement;
}

/** Parameters of the whole model: embeddings, every layer, the final norm and (untied) the LM head. */
export function modelParameters(config: LlamaConfig): number {
  const embed = config.vocab_size * config.hidden_size;
  return embed + config.num_hidden_layers * layerParameters(config) + config.hidden_size + (config.tie_word_embeddings ? 0 : embed);
}

/**
 * Bytes the KV cache takes per token per layer: 2 (K and V) × kv heads × head_dim × bytes per
 * element (`torch_dtype`'s unless given; the reference engine caches in f32, 4).
 */
export function kvBytesPerToken(config: LlamaConfig, bytesPerElement = TORCH_DTYPE_BYTES[config.torch_dtype]): number {
  return 2 * config.num_key_value_heads * config.head_dim * bytesPerElement;
}

/**
 * Bytes of the weights an agent holds for `layers` decoder layers of the model, as the plan
 * counts them (`torch_dtype`'s bytes unless given): the layers, plus the embeddings when it holds
 * the first layer, plus the final norm and the LM head when it holds the last (the head is the
 * embeddings when tied: counted once on an agent holding both ends).
 */
export function heldWeightBytes(config: LlamaConfig, layers: number, first: boolean, last: boolean, bytesPerElement = TORCH_DTYPE_BYTES[config.torch_dtype]): number {
  const embed = config.vocab_size * config.hidden_size;
  const head = last ? config.hidden_size + (config.tie_word_embeddings && first ? 0 : embed) : 0;
  return (layers * layerParameters(config) + (first ? embed : 0) + head) * bytesPerElement;
}

/**
 * Bytes of the weights outside the decoder layers that one agent may have to hold: the
 * embeddings, the final norm and the LM head (one agent holding every layer holds them all).
 * The plan keeps them aside on every agent, since any may become a first or last stage.
 */
export function endWeightBytes(config: LlamaConfig, bytesPerElement = TORCH_DTYPE_BYTES[config.torch_dtype]): number {
  return heldWeightBytes(config, 0, true, true, bytesPerElement);
}
