/**
 * Choosing the next token from the last stage's logits: temperature 0 is greedy (the lowest id
 * wins a tie); otherwise a draw from the softmax at that temperature, cut to the nucleus `top_p`,
 * with a generator seeded by (seed, step) alone, so a generation resumed at step s draws what the
 * unbroken one would (docs/engine-reference.md).
 */
import { mulberry32 } from '../core/random.js';
import { ModelError } from './model-error.js';

/** How to choose a token. */
export interface SamplingOptions {
  /** 0 is greedy. */
  readonly temperature: number;
  /** The nucleus: the fewest most-likely tokens whose probability reaches it. @defaultValue 1 */
  readonly topP?: number;
  /** @defaultValue 0 */
  readonly seed?: number;
}

/** The index of the largest logit, the lowest on a tie; -1 for none. */
export function argmax(logits: ArrayLike<number>): number {
  let best = -1;
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i] as number;
    if (v > max || best === -1) {
      max = v;
      best = i;
    }
  }
  return best;
}

/** A 32-bit seed from (seed, step): each step's generator is independent of the steps before it. */
export function stepSeed(seed: number, step: number): number {
  let h = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul((step >>> 0) + 0x7f4a7c15, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The token chosen at `step` from `logits`.
 * @throws {ModelError} `InvalidOptions` for a negative or non-finite temperature, a top_p outside
 *   (0, 1], or no logits.
 */
export function sampleToken(logits: ArrayLike<number>, step: number, options: SamplingOptions): number {
  const { temperature } = options;
  const topP = options.topP ?? 1;
  if (!(temperature >= 0) || !Number.isFinite(temperature)) throw new ModelError('InvalidOptions', `temperature must be a finite number ≥ 0, got ${temperature}`);
  if (!(topP > 0 && topP <= 1)) throw new ModelError('InvalidOptions', `top_p must be in (0, 1], got ${topP}`);
  if (logits.length === 0) throw new ModelError('InvalidOptions', 'no logits to sample from');
  if (temperature === 0) return argmax(logits);
  const max = logits[argmax(logits)] as number;
  const weights = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) weights[i] = Math.exp(((logits[i] as number) - max) / temperature);
  // Most likely first, the lower id first on a tie: one order on every machine.
  const order = Array.from({ length: logits.length }, (_, i) => i).sort((a, b) => (weights[b] as number) - (weights[a] as number) || a - b);
  let total = 0;
  for (const i of order) total += weights[i] as number;
  let kept = order.length;
  if (topP < 1) {
    let mass = 0;
    for (let k = 0; k < order.length; k++) {
      mass += weights[order[k] as number] as number;
      if (mass >= topP * total) {
        kept = k + 1;
        break;
      }
    }
  }
  let mass = 0;
  for (let k = 0; k < kept; k++) mass += weights[order[k] as number] as number;
  const draw = (mulberry32(stepSeed(options.seed ?? 0, step))() / 4294967296) * mass;
  let acc = 0;
  for (let k = 0; k < kept; k++) {
    acc += weights[order[k] as number] as number;
    if (draw < acc) return order[k] as number;
  }
  return order[kept - 1] as number;
}
