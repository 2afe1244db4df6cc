import { describe, expect, it } from 'vitest';
import { DigestReference, runLayers } from '../../src/core/digest-model.js';
import { stageDelayMs } from '../../src/agent/engines/digest-time.js';
import { digestHex, expectedDigest, promptDigest } from '../../src/wire/digest.js';

describe('stageDelayMs', () => {
  const work = { layers: 6, tokens: 2, perLayerMs: 2, score: 3 };
  it('is layers × tokens × perLayerMs ÷ score without jitter', () => {
    expect(stageDelayMs(work, 0, 1, 'a')).toBe(8);
  });
  it('stays within the jitter band and is the same for the same call and seed', () => {
    const samples = Array.from({ length: 200 }, (_, i) => stageDelayMs(work, 0.25, 7, `s/${i}/0`));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(6);
    expect(Math.max(...samples)).toBeLessThanOrEqual(10);
    expect(new Set(samples).size).toBeGreaterThan(100);
    expect(stageDelayMs(work, 0.25, 7, 's/3/0')).toBe(samples[3]);
    expect(stageDelayMs(work, 0.25, 8, 's/3/0')).not.toBe(samples[3]);
  });
});

describe('expectedDigest', () => {
  it('is the prompt digest through every layer, step after step, on one holder', () => {
    const ref = new DigestReference(12);
    let x = promptDigest('hi');
    for (let t = 0; t < 3; t++) x = ref.step(x);
    expect(expectedDigest(12, 'hi', 3)).toBe(digestHex(x));
  });
  it('changes with the prompt, the steps and the layers, and a split route gives the same bytes', () => {
    const base = expectedDigest(12, 'hi', 3);
    expect(new Set([base, expectedDigest(12, 'hj', 3), expectedDigest(12, 'hi', 4), expectedDigest(11, 'hi', 3)]).size).toBe(4);
    // Two holders [0,5) and [5,12), each with its own caches: the same output as one.
    const a = new Map<number, number>();
    const b = new Map<number, number>();
    let x = promptDigest('hi');
    for (let t = 0; t < 3; t++) x = runLayers(runLayers(x, 0, 5, a), 5, 12, b);
    expect(digestHex(x)).toBe(base);
  });
});
