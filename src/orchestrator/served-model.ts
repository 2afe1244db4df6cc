/**
 * A model directory as `serve --model DIR` reads it: only `config.json` and the tokenizer, never
 * the weights. The plan's sizes come from the config: a layer's GB from its shapes and
 * `torch_dtype`, the KV cache per token from 2 × kv_heads × head_dim × bytes per layer
 * (docs/completions.md, "Serving a model").
 */
import type { ModelSpec } from '../core/types.js';
import { endWeightBytes, kvBytesPerToken, layerBytes, readLlamaConfig, type LlamaConfig } from '../model/config.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { modelIdOf } from '../model/model-id.js';
import type { TextModel } from './completion-run.js';

/** A served model: its plan's spec, its tokenizer, what start says of it. */
export interface ServedModel {
  readonly spec: ModelSpec;
  readonly text: TextModel;
  readonly config: LlamaConfig;
  /**
   * GB an end stage holds beside its layers (embeddings, final norm, LM head): the plan keeps it
   * aside on every agent (the orchestrator's `agentReserveGb`).
   */
  readonly endGb: number;
  /** One line for the start log: where the sizes came from. */
  readonly summary: string;
}

/**
 * Reads `dir`'s config and tokenizer.
 * @throws {ModelError} for a config the reference engine refuses (naming the field) or a missing tokenizer
 */
export async function readServedModel(dir: string, pipelines = 1): Promise<ServedModel> {
  const config = await readLlamaConfig(dir);
  const tokenizer = await loadTokenizer(dir);
  const id = modelIdOf(dir);
  const layerGb = layerBytes(config) / 1e9;
  const kvGbPerToken = (kvBytesPerToken(config) * config.num_hidden_layers) / 1e9;
  const endGb = endWeightBytes(config) / 1e9;
  const spec: ModelSpec = { id, kind: 'base', layers: config.num_hidden_layers, layerGb, kvGbPerToken, pipelines };
  const summary = `model "${id}" from ${dir}: ${config.num_hidden_layers} layers of ${fmt(layerGb)} GB (${config.torch_dtype}, from config.json's shapes), KV ${fmt(kvBytesPerToken(config) / 1e9)} GB per token per layer; ${fmt(endGb)} GB of embeddings and head kept aside on every agent; ${pipelines} ${pipelines === 1 ? 'copy' : 'copies'} planned; weights not read here`;
  return { spec, text: { id, tokenizer, vocab: config.vocab_size }, config, endGb, summary };
}

function fmt(gb: number): string {
  return gb.toPrecision(3);
}
