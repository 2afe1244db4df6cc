/**
 * A model an agent runs whole for `--openai` (docs/openai.md, "The reference engine as an
 * upstream"): every layer loaded in its engine as one span, its tokenizer, its context length and
 * its chat template (the model's own, else the documented default).
 */
import { readLlamaConfig } from '../../model/config.js';
import { loadTokenizer, type ModelTokenizer } from '../../model/tokenizer.js';
import { modelChatTemplate, type ChatTemplate } from '../../wire/chat-prompt.js';
import type { StageEngine, StageSpan } from '../stage-engine.js';

/** A model loaded whole, with what its completions need. */
export interface WholeModel {
  readonly id: string;
  readonly engine: StageEngine;
  /** Every layer: `[0, layers)`. */
  readonly span: StageSpan;
  readonly tokenizer: ModelTokenizer;
  /** Tokens of its vocabulary (the logits' length). */
  readonly vocab: number;
  /** `max_position_embeddings`: a prompt and its completion fit in it. */
  readonly contextTokens: number;
  readonly template: ChatTemplate;
}

/**
 * Loads every layer of the model `id` of directory `dir` in `engine`, and its tokenizer and chat template.
 * @throws the engine's error for weights it cannot load; `ModelError` for a config or tokenizer it refuses
 */
export async function loadWholeModel(engine: StageEngine, id: string, dir: string): Promise<WholeModel> {
  const config = await readLlamaConfig(dir);
  const span: StageSpan = { modelId: id, layerStart: 0, layerEnd: config.num_hidden_layers, layers: config.num_hidden_layers };
  const [tokenizer, template] = await Promise.all([loadTokenizer(dir), modelChatTemplate(dir)]);
  await engine.load(span);
  return { id, engine, span, tokenizer, vocab: config.vocab_size, contextTokens: config.max_position_embeddings, template };
}
