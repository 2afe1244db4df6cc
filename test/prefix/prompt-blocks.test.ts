/** Prompt blocks (docs/prefix-cache.md): chained keys, prefix-stable whatever follows, text apart from ids. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkPrompt, promptTokens, PROMPT_LIMIT, type Prompt } from '../../src/core/prompt.js';
import { emptyBlocks, promptBlocks, stringSeed } from '../../src/prefix/prompt-blocks.js';
import { RoutingError } from '../../src/core/errors.js';

const keysOf = (prompt: Prompt, model = 'base', size = typeof prompt === 'string' ? 64 : 16): number[] => {
  const b = promptBlocks(prompt, stringSeed(model), size, emptyBlocks());
  return Array.from(b.keys.subarray(0, b.count));
};
const SEEDED = { seed: 20261203, numRuns: 200 } as const;

describe('promptBlocks', () => {
  it('names whole blocks only, each a 53-bit integer, the same for the same prompt', () => {
    const text = 'x'.repeat(64 * 3 + 10);
    const keys = keysOf(text);
    expect(keys).toHaveLength(3);
    for (const k of keys) expect(Number.isSafeInteger(k) && k >= 0).toBe(true);
    expect(keysOf(text)).toEqual(keys);
    expect(keysOf('y'.repeat(63))).toEqual([]);
    expect(keysOf(Array.from({ length: 40 }, (_, i) => i))).toHaveLength(2);
  });

  it('chains: a block equal in content but after a different block has another key', () => {
    const a = keysOf('a'.repeat(64) + 'c'.repeat(64));
    const b = keysOf('b'.repeat(64) + 'c'.repeat(64));
    expect(a[1]).not.toBe(b[1]);
    expect(new Set([...a, ...b]).size).toBe(4);
  });

  it('keeps a prefix\'s keys whatever follows it, ASCII or not (the fast and the portable path agree)', () => {
    const char = fc.oneof(fc.constantFrom('a', 'b', ' ', '\n', '~'), fc.constantFrom('é', '中', '😀', '\u0000', '\u007f', '\u0080'));
    const text = (max: number) => fc.array(char, { maxLength: max }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(text(400), text(300), (a, b) => {
        const whole = keysOf(a + b);
        const alone = keysOf(a);
        expect(whole.slice(0, alone.length)).toEqual(alone);
      }),
      SEEDED,
    );
  });

  it('keeps a prefix\'s keys for token ids too, and differs by model', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0x7fffffff }), { maxLength: 120 }), fc.array(fc.integer({ min: 0, max: 50_000 }), { maxLength: 60 }), (a, b) => {
        const alone = keysOf(a);
        expect(keysOf([...a, ...b]).slice(0, alone.length)).toEqual(alone);
        if (alone.length > 0) expect(keysOf(a, 'other')[0]).not.toBe(alone[0]);
      }),
      SEEDED,
    );
  });

  it('never gives a text prompt and an id prompt the same key, even over the same code points', () => {
    const text = 'abcd'.repeat(64);
    const ids = Array.from(text, (c) => c.charCodeAt(0));
    const t = new Set(keysOf(text, 'base', 16));
    for (const k of keysOf(ids, 'base', 16)) expect(t.has(k)).toBe(false);
  });

  it('hashes a block size that is not a multiple of 16 the portable way, prefix-stable', () => {
    const a = 'hello world '.repeat(20);
    expect(keysOf(a + 'tail é', 'base', 50).slice(0, keysOf(a, 'base', 50).length)).toEqual(keysOf(a, 'base', 50));
  });

  it('grows its buffer for long prompts and reuses it for short ones', () => {
    const out = emptyBlocks();
    const long = 'z'.repeat(64 * 1000);
    expect(promptBlocks(long, 1, 64, out).count).toBe(1000);
    expect(promptBlocks('z'.repeat(128), 1, 64, out).count).toBe(2);
    expect(out.keys[0]).toBe(promptBlocks(long, 1, 64, emptyBlocks()).keys[0]);
  });
});

describe('checkPrompt and promptTokens', () => {
  it('counts ⌈characters ÷ 4⌉ for text and one token per id', () => {
    expect(promptTokens('abcde')).toBe(2);
    expect(promptTokens('')).toBe(0);
    expect(promptTokens([5, 6, 7])).toBe(3);
  });

  it.each([
    ['a number', 12, /must be a string or an array of token ids/],
    ['a fractional id', [1, 2.5], /\[1\] must be a token id/],
    ['a negative id', [-1], /\[0\] must be a token id/],
    ['an id past 2^31 - 1', [2 ** 31], /\[0\] must be a token id/],
    ['a string id', ['1'], /\[0\] must be a token id/],
    ['a prompt past the limit', 'x'.repeat(PROMPT_LIMIT + 1), /at most 4194304/],
  ])('refuses %s with InvalidRequest naming "prompt"', (_what, prompt, message) => {
    expect(() => checkPrompt(prompt)).toThrow(RoutingError);
    expect(() => checkPrompt(prompt)).toThrow(message);
    try {
      checkPrompt(prompt);
    } catch (error) {
      expect((error as RoutingError).code).toBe('InvalidRequest');
      expect((error as Error).message).toContain('"prompt"');
    }
  });
});
