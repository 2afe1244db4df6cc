/**
 * The stand-in agent's "model": no weights, only time and a digest. A stage call takes
 * `layers × tokens × perLayerMs ÷ score` of real time (times a seeded jitter) and returns the
 * stateful digest of `src/core/digest-model.ts`, so the output of a whole generation proves
 * which layers ran, in which order, on caches rebuilt from the right replay.
 */
import { DigestReference, mix } from '../core/digest-model.js';

/** What one stage call costs in time, before jitter. */
export interface StageTimeInput {
  readonly layers: number;
  readonly tokens: number;
  readonly perLayerMs: number;
  readonly score: number;
}

/**
 * The time a stage call takes: `layers × tokens × perLayerMs ÷ score`, times a jitter factor in
 * `[1 − jitter, 1 + jitter]` drawn from `seed` and the call's identity (same call, same time).
 */
export function stageDelayMs(work: StageTimeInput, jitter: number, seed: number, callKey: string): number {
  const base = (work.layers * work.tokens * work.perLayerMs) / Math.max(work.score, 0.01);
  const u = hashText(callKey, seed) / 0x1_0000_0000; // [0, 1)
  return Math.max(0, base * (1 + jitter * (2 * u - 1)));
}

/** A 32-bit hash of a string (the mix of its UTF-16 code units), seeded. */
export function hashText(text: string, seed = 0): number {
  let h = mix(0x2545f491, seed >>> 0);
  for (let i = 0; i < text.length; i++) h = mix(h, text.charCodeAt(i));
  return mix(h, text.length);
}

/** The first step's input of a generation: the digest of its prompt. */
export function promptDigest(prompt: string): number {
  return hashText(prompt, 0x9e37);
}

/** A digest as the API shows it: 8 lowercase hex digits. */
export function digestHex(digest: number): string {
  return (digest >>> 0).toString(16).padStart(8, '0');
}

/** Tokens the first step of a generation carries (about four characters a token, at least one). */
export function promptTokens(prompt: string): number {
  return Math.max(1, Math.ceil(prompt.length / 4));
}

/**
 * What a generation must return: the prompt's digest through every layer of the model `steps`
 * times, each step's output the next step's input, on one holder that never fails.
 * @example expectedDigest(12, 'hello', 8) // '…8 hex digits…'
 */
export function expectedDigest(layers: number, prompt: string, steps: number): string {
  const reference = new DigestReference(layers);
  let x = promptDigest(prompt);
  for (let t = 0; t < steps; t++) x = reference.step(x);
  return digestHex(x);
}
