import { customRandom, nanoid, urlAlphabet } from 'nanoid';
import type { IdSource } from './types.js';

/** mulberry32: a small, fast, seeded PRNG returning integers in [0, 2^32). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** nanoid ids (21 chars): the default id source. */
export const randomIds: IdSource = () => nanoid();

/**
 * A deterministic nanoid-shaped id source: the same seed gives the same ids, so a `--seed` run
 * prints the same bytes.
 * @example const ids = seededIds(42); ids(); // always the same first id
 */
export function seededIds(seed: number, size = 10): IdSource {
  const next = mulberry32(seed);
  return customRandom(urlAlphabet, size, (bytes) => {
    const out = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i++) out[i] = next() & 0xff;
    return out;
  });
}
