import { describe, expect, it } from 'vitest';
import { argmax, sampleToken, stepSeed } from '../../src/model/sampler.js';

const logits = Float32Array.from([1, 3, 2.5, 3, -1, 0.5]);

describe('sampleToken', () => {
  it('is greedy at temperature 0, the lowest id winning a tie', () => {
    expect(argmax(logits)).toBe(1);
    expect(sampleToken(logits, 7, { temperature: 0, seed: 99 })).toBe(1);
  });

  it('draws from a generator seeded by (seed, step) alone: the same draw for the same pair, whatever came before', () => {
    const draws = (seed: number) => Array.from({ length: 64 }, (_, step) => sampleToken(logits, step, { temperature: 1, seed }));
    expect(draws(5)).toEqual(draws(5));
    expect(draws(5)).not.toEqual(draws(6));
    expect(sampleToken(logits, 40, { temperature: 1, seed: 5 })).toBe(draws(5)[40]);
    expect(new Set(draws(5)).size).toBeGreaterThan(2);
    expect(stepSeed(1, 2)).not.toBe(stepSeed(2, 1));
  });

  it('keeps only the nucleus: with top_p small only the most likely tokens are drawn', () => {
    const drawn = new Set(Array.from({ length: 200 }, (_, step) => sampleToken(logits, step, { temperature: 1, topP: 0.5, seed: 1 })));
    expect([...drawn].sort()).toEqual([1, 3]); // the two tied at 3 hold ≈ 0.6 of the mass together
    const one = new Set(Array.from({ length: 50 }, (_, step) => sampleToken(logits, step, { temperature: 1, topP: 0.1, seed: 1 })));
    expect([...one]).toEqual([1]);
  });

  it('refuses a negative temperature and a top_p outside (0, 1]', () => {
    expect(() => sampleToken(logits, 0, { temperature: -1 })).toThrow(/temperature must be a finite number ≥ 0, got -1/);
    expect(() => sampleToken(logits, 0, { temperature: 1, topP: 0 })).toThrow(/top_p must be in \(0, 1\], got 0/);
  });
});
