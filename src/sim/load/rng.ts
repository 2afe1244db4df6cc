/**
 * The load simulation's draws, from the project's one seeded PRNG (mulberry32): the same seed gives the same
 * numbers on every platform, so a seeded run prints the same bytes.
 */
import { uniform } from '../../core/random.js';

/** Uniform and exponential draws from one seeded stream. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Exponential with the given mean. */
  exp(mean: number): number;
  /** Log-normal with mean 1 and coefficient of variation `cv` (0 gives exactly 1). */
  unitLogNormal(cv: number): number;
}

/**
 * A mulberry32 stream.
 * @example const rng = createRng(42); rng.exp(10);
 */
export function createRng(seed: number): Rng {
  const next = uniform(seed);
  return {
    next,
    int: (n) => Math.floor(next() * n),
    // 1 - u is in (0, 1], so the log is finite.
    exp: (mean) => -mean * Math.log(1 - next()),
    unitLogNormal: (cv) => {
      if (cv === 0) return 1;
      const sigma2 = Math.log(1 + cv * cv);
      // Box-Muller; 1 - u is in (0, 1].
      const z = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
      return Math.exp(Math.sqrt(sigma2) * z - sigma2 / 2);
    },
  };
}

/**
 * An independent seed for one purpose of one run (FNV-1a over the labels, mixed with `seed`), so
 * that arrivals, request sizes and each policy's coin flips never share a stream: every policy
 * sees the same workload for the same seed.
 */
export function deriveSeed(seed: number, ...labels: readonly (string | number)[]): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (const label of labels) {
    const text = `${label}\u0000`;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}
