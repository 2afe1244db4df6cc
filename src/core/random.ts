/**
 * One seeded PRNG for the whole project (ids, simulations, benchmarks): the same seed gives the
 * same numbers on every platform, so a seeded run prints the same bytes.
 */

import { describeValue } from './describe.js';
import { SwarmError } from './errors.js';

/**
 * mulberry32: a small, fast, seeded PRNG returning integers in [0, 2^32). The seed is taken
 * modulo 2^32.
 * @throws {SwarmError} `InvalidInput` for a seed that is not a finite number.
 */
export function mulberry32(seed: number): () => number {
  if (typeof seed !== 'number' || !Number.isFinite(seed)) throw new SwarmError('InvalidInput', `a seed must be a finite number, got ${describeValue(seed)}`);
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/**
 * Uniform floats in [0, 1) from a mulberry32 stream.
 * @throws {SwarmError} `InvalidInput` for a seed that is not a finite number.
 * @example const random = uniform(42); random(); // the same first draw on every machine
 */
export function uniform(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 4294967296;
}
