/**
 * The prefix-cache index (docs/prefix-cache.md): bounded per copy, least recently used leaves
 * first, a copy's blocks always a prefix of a chain, wiped with a lost node or a changed copy.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PrefixIndex, type CopyCache } from '../../src/prefix/prefix-index.js';
import type { SwarmPlan } from '../../src/core/types.js';

const SEEDED = { seed: 20261204, numRuns: 80 } as const;

/** `copies` one-node copies of an 8-layer model; node i has `memory(i)` GB (8 for the weights). */
function plan(copies: number): SwarmPlan {
  return {
    models: [{ id: 'm', layers: 8, kvGbPerToken: 0.001 }],
    pipelines: Array.from({ length: copies }, (_, i) => ({ id: `m/${i}`, modelId: 'm', stages: [{ nodeId: `n${i}`, layerStart: 0, layerEnd: 8 }] })),
  };
}
/** Memory for `tokens` KV tokens beside the weights. */
const memoryFor = (tokens: number) => () => 8 + tokens * 0.001;
const copy = (index: PrefixIndex, id: string) => index.copies.get(id) as CopyCache;
/** A prompt of `length` blocks on chain `chain` (keys unique per chain and position). */
const chainKeys = (chain: number, length: number) => Float64Array.from({ length }, (_, k) => chain * 10_000 + k + 1);
const record = (index: PrefixIndex, c: CopyCache, keys: Float64Array) => index.record(c, keys, keys.length, index.depth(c, keys, keys.length), 16);

describe('PrefixIndex', () => {
  it('finds the deepest match anywhere and per copy, by blocks from the start', () => {
    const index = new PrefixIndex(plan(2), memoryFor(100_000), 1 << 20);
    const a = copy(index, 'm/0');
    const b = copy(index, 'm/1');
    record(index, a, chainKeys(1, 10));
    record(index, b, chainKeys(1, 4));
    const probe = Float64Array.from([...chainKeys(1, 7), 99_999]);
    expect(index.deepest(probe, probe.length)).toBe(7);
    expect(index.depth(a, probe, probe.length)).toBe(7);
    expect(index.depth(b, probe, probe.length)).toBe(4);
    expect(index.depth(b, chainKeys(2, 3), 3)).toBe(0);
  });

  it('evicts the least recently used prompt first, its tail before its head', () => {
    const index = new PrefixIndex(plan(1), memoryFor(16 * 10), 1 << 20); // 10 blocks of 16 tokens
    const c = copy(index, 'm/0');
    record(index, c, chainKeys(1, 4));
    record(index, c, chainKeys(2, 4));
    record(index, c, chainKeys(1, 4)); // chain 1 used again: chain 2 is now the oldest
    record(index, c, chainKeys(3, 4)); // 12 blocks > 10: two of chain 2's go, from its end
    expect(c.count).toBe(10);
    expect(index.depth(c, chainKeys(2, 4), 4)).toBe(2);
    expect(index.depth(c, chainKeys(1, 4), 4)).toBe(4);
    expect(index.depth(c, chainKeys(3, 4), 4)).toBe(4);
  });

  it('keeps a shared head while its branches are evicted (a parent inherits its children\'s recency)', () => {
    const index = new PrefixIndex(plan(1), memoryFor(16 * 6), 1 << 20);
    const c = copy(index, 'm/0');
    const head = chainKeys(1, 3);
    const branch = (n: number) => Float64Array.from([...head, 50_000 + n * 10 + 1, 50_000 + n * 10 + 2]);
    record(index, c, branch(1));
    record(index, c, branch(2)); // 7 blocks > 6: branch 1's tail goes
    expect(index.depth(c, head, 3)).toBe(3);
    expect(index.depth(c, branch(2), 5)).toBe(5);
    expect(index.depth(c, branch(1), 5)).toBe(4);
  });

  it('holds a prompt longer than the copy as the prefix that fits', () => {
    const index = new PrefixIndex(plan(1), memoryFor(16 * 5), 1 << 20);
    const c = copy(index, 'm/0');
    record(index, c, chainKeys(1, 12));
    expect(c.count).toBe(5);
    expect(index.depth(c, chainKeys(1, 12), 12)).toBe(5);
  });

  it('property: after any records, corrections and losses, every copy is within its bounds and holds prefixes only', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('record' as const), copy: fc.nat(2), chain: fc.nat(5), length: fc.integer({ min: 1, max: 30 }) }),
      fc.record({ kind: fc.constant('correct' as const), copy: fc.nat(2), estimate: fc.nat(400), reported: fc.nat(400) }),
      fc.record({ kind: fc.constant('lose' as const), copy: fc.nat(2) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 40 }), fc.array(op, { maxLength: 40 }), (capBlocks, maxBlocks, ops) => {
        const index = new PrefixIndex(plan(3), memoryFor(capBlocks * 16), maxBlocks);
        const copies = [0, 1, 2].map((i) => copy(index, `m/${i}`));
        for (const o of ops) {
          const c = copies[o.copy] as CopyCache;
          if (o.kind === 'record') record(index, c, chainKeys(o.chain, o.length));
          else if (o.kind === 'correct') index.correct(c, o.estimate, o.reported, 16);
          else index.nodeLost(`n${o.copy}`);
          for (const x of copies) {
            expect(x.used).toBeLessThanOrEqual(Math.max(x.limit, 0));
            expect(x.limit).toBeLessThanOrEqual(x.capacity);
            expect(x.count).toBeLessThanOrEqual(maxBlocks);
            expect(x.used).toBe(x.count * 16);
          }
          expect(index.size).toBe(copies.reduce((n, x) => n + x.count, 0));
        }
        // Prefixes only: a copy holding block k of a chain holds block k - 1, and its depth counts them.
        for (const x of copies) {
          for (let chain = 0; chain <= 5; chain++) {
            const keys = chainKeys(chain, 30);
            const held = Array.from({ length: 30 }, (_, k) => index.depth(x, keys.subarray(k, k + 1), 1) === 1);
            for (let k = 1; k < 30; k++) if (held[k]) expect(held[k - 1]).toBe(true);
            const first = held.indexOf(false);
            expect(index.depth(x, keys, 30)).toBe(first === -1 ? 30 : first);
          }
        }
      }),
      SEEDED,
    );
  });

  it('correct: fewer cached than estimated lowers the copy\'s limit and evicts; more raises it back to the capacity', () => {
    const index = new PrefixIndex(plan(1), memoryFor(16 * 20), 1 << 20);
    const c = copy(index, 'm/0');
    record(index, c, chainKeys(1, 10));
    record(index, c, chainKeys(2, 10));
    index.correct(c, 160, 32, 16); // estimated 10 blocks, found 2: 8 blocks fewer
    expect(c.limit).toBe(16 * 12);
    expect(c.count).toBe(12);
    index.correct(c, 0, 10_000, 16);
    expect(c.limit).toBe(c.capacity);
    index.correct(c, 10_000, 0, 16);
    expect(c.limit).toBe(16); // never below one block
  });

  it('a lost node wipes every copy through it; adopting a plan keeps unchanged copies, wipes changed ones, drops gone ones', () => {
    const index = new PrefixIndex(plan(3), memoryFor(10_000), 1 << 20);
    for (let i = 0; i < 3; i++) record(index, copy(index, `m/${i}`), chainKeys(1, 5));
    index.nodeLost('n1');
    expect(copy(index, 'm/1').count).toBe(0);
    expect(copy(index, 'm/0').count).toBe(5);
    const next: SwarmPlan = {
      models: plan(0).models,
      pipelines: [
        { id: 'm/0', modelId: 'm', stages: [{ nodeId: 'n0', layerStart: 0, layerEnd: 8 }] },
        { id: 'm/2', modelId: 'm', stages: [{ nodeId: 'n9', layerStart: 0, layerEnd: 8 }] },
        { id: 'm/new', modelId: 'm', stages: [{ nodeId: 'n1', layerStart: 0, layerEnd: 8 }] },
      ],
    };
    const generation = copy(index, 'm/2').generation;
    index.adopt(next);
    expect(copy(index, 'm/0').count).toBe(5);
    expect(copy(index, 'm/2').count).toBe(0);
    expect(copy(index, 'm/2').generation).toBe(generation + 1);
    expect(index.copies.has('m/1')).toBe(false);
    expect(copy(index, 'm/new').count).toBe(0);
    expect(index.size).toBe(5);
    expect(index.deepest(chainKeys(1, 5), 5)).toBe(5);
    index.nodeLost('n0');
    expect(index.deepest(chainKeys(1, 5), 5)).toBe(0);
  });
});
