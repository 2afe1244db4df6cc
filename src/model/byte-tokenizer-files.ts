/**
 * The tokenizer files make-model writes: a byte-level BPE `tokenizer.json` (GPT-2's byte-to-
 * character table, as Llama 3 and SmolLM ship, with no merges: one token per byte) and a
 * `tokenizer_config.json` with a simple chat template. Ids: 0 `<unk>`, 1 `<s>` (bos), 2 `</s>`
 * (eos), then byte b is id 3 + b (docs/engine-reference.md).
 */

/** The special tokens, in id order. */
export const BYTE_TOKENIZER_SPECIALS = ['<unk>', '<s>', '</s>'] as const;

/** The id of byte `b` (0–255) in the byte-level vocabulary. */
export const byteTokenId = (b: number): number => BYTE_TOKENIZER_SPECIALS.length + b;

/** Tokens the byte-level vocabulary holds: the specials and 256 bytes. */
export const BYTE_TOKENIZER_SIZE = BYTE_TOKENIZER_SPECIALS.length + 256;

/** The chat template written to `tokenizer_config.json` (Jinja, as transformers renders it). */
export const BYTE_CHAT_TEMPLATE =
  "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

/** GPT-2's table: byte → the printable character byte-level BPE spells it with. */
export function byteToUnicode(): string[] {
  const direct: number[] = [];
  for (let b = 33; b <= 126; b++) direct.push(b);
  for (let b = 161; b <= 172; b++) direct.push(b);
  for (let b = 174; b <= 255; b++) direct.push(b);
  const table: string[] = new Array<string>(256);
  let next = 0;
  for (let b = 0; b < 256; b++) {
    if (direct.includes(b)) table[b] = String.fromCodePoint(b);
    else table[b] = String.fromCodePoint(256 + next++);
  }
  return table;
}

/** The `tokenizer.json` object of the byte-level vocabulary. */
export function byteLevelTokenizerJson(): Record<string, unknown> {
  const vocab: Record<string, number> = {};
  BYTE_TOKENIZER_SPECIALS.forEach((token, id) => (vocab[token] = id));
  byteToUnicode().forEach((char, b) => (vocab[char] = byteTokenId(b)));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: BYTE_TOKENIZER_SPECIALS.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: [] },
  };
}

/** The `tokenizer_config.json` object: the specials, the chat template, no added bos on encode. */
export function byteLevelTokenizerConfigJson(maxLength: number): Record<string, unknown> {
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: '<s>',
    eos_token: '</s>',
    unk_token: '<unk>',
    add_bos_token: false,
    add_eos_token: false,
    model_max_length: maxLength,
    clean_up_tokenization_spaces: false,
    chat_template: BYTE_CHAT_TEMPLATE,
  };
}
