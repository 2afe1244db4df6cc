/**
 * A model directory's tokenizer, read from `tokenizer.json` (and `tokenizer_config.json` when
 * present) through the maintained pure-JS `@huggingface/tokenizers` package, an optional peer
 * loaded only here (docs/engine-reference.md).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelError } from './model-error.js';

/** Text ↔ token ids for one model. */
export interface ModelTokenizer {
  /** The text's ids, without special tokens added. */
  encode(text: string): number[];
  /** The ids' text; special tokens are dropped when `skipSpecial` (the default). */
  decode(ids: readonly number[], skipSpecial?: boolean): string;
  /** The id of a token string, if the vocabulary has it. */
  idOf(token: string): number | undefined;
  readonly bosTokenId: number | undefined;
  readonly eosTokenId: number | undefined;
  /** `tokenizer_config.json`'s `chat_template`, when given as one string. */
  readonly chatTemplate: string | undefined;
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  try {
    const raw: unknown = JSON.parse(await readFile(path, 'utf8'));
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('not a JSON object');
    return raw as Record<string, unknown>;
  } catch (error) {
    throw new ModelError('InvalidFile', `${path}: cannot be read as a JSON object (${(error as Error).message})`, { cause: error });
  }
}

/** A special token as `tokenizer_config.json` writes it: a string or `{ content }`. */
function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as { content?: unknown }).content === 'string') return (value as { content: string }).content;
  return undefined;
}

/**
 * Loads the tokenizer of the model directory `dir`.
 * @throws {ModelError} `InvalidFile` when `tokenizer.json` is absent or not a tokenizer the
 *   package reads. Fails with the package's own import error when `@huggingface/tokenizers` is not installed.
 */
export async function loadTokenizer(dir: string): Promise<ModelTokenizer> {
  const jsonPath = join(dir, 'tokenizer.json');
  const configPath = join(dir, 'tokenizer_config.json');
  const tokenizerJson = await readJson(jsonPath);
  const config = existsSync(configPath) ? await readJson(configPath) : {};
  const { Tokenizer } = await import('@huggingface/tokenizers');
  let tokenizer: InstanceType<typeof Tokenizer>;
  try {
    tokenizer = new Tokenizer(tokenizerJson, config);
  } catch (error) {
    throw new ModelError('InvalidFile', `${jsonPath}: not a tokenizer @huggingface/tokenizers reads (${(error as Error).message})`, { cause: error });
  }
  const idOf = (token: string): number | undefined => tokenizer.token_to_id(token);
  const special = (field: string): number | undefined => {
    const text = tokenText(config[field]);
    return text === undefined ? undefined : idOf(text);
  };
  const template = config['chat_template'];
  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    decode: (ids, skipSpecial = true) => tokenizer.decode([...ids], { skip_special_tokens: skipSpecial }),
    idOf,
    bosTokenId: special('bos_token'),
    eosTokenId: special('eos_token'),
    chatTemplate: typeof template === 'string' ? template : undefined,
  };
}
