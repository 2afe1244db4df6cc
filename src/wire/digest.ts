/**
 * The stand-in digest protocol's values, which the orchestrator and the digest engine both
 * compute: a generation's first input is its prompt's digest, and each stage returns the stateful
 * digest of `src/core/digest-model.ts`, so the output of a whole generation proves which layers
 * ran, in which order, on caches rebuilt from the right replay (docs/engine.md).
 */
import { DigestReference, mix } from '../core/digest-model.js';
import { ServeError } from './serve-error.js';
import type { Tensor } from './tensor.js';

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

/** The shape of every digest tensor (one, shared: a replay of thousands allocates no shapes). */
const DIGEST_SHAPE: readonly number[] = Object.freeze([1, 1]);

/** A `u32` `[1, 1]` tensor of one digest. */
export function digestTensor(value: number): Tensor {
  return { dtype: 'u32', shape: DIGEST_SHAPE, data: new Uint8Array(Uint32Array.of(value >>> 0).buffer) };
}

/** `u32` `[1, 1]` tensors of many digests, views of one buffer (a replay of thousands allocates once). */
export function digestTensors(values: readonly number[]): Tensor[] {
  const all = Uint32Array.from(values, (v) => v >>> 0);
  return values.map((_, i) => ({ dtype: 'u32', shape: DIGEST_SHAPE, data: new Uint8Array(all.buffer, i * 4, 4) }));
}

/**
 * The digest a `u32` `[1, 1]` tensor carries.
 * @throws {ServeError} 400 `InvalidRequest` naming `field` for any other tensor
 */
export function digestOf(tensor: Tensor, field: string): number {
  if (tensor.dtype !== 'u32' || tensor.shape.length !== 2 || tensor.shape[0] !== 1 || tensor.shape[1] !== 1 || tensor.data.byteLength !== 4) {
    throw new ServeError('InvalidRequest', 400, `${field}: the digest engine takes a u32 [1, 1] tensor, got ${tensor.dtype} [${tensor.shape.join(', ')}]`, { field });
  }
  const d = tensor.data;
  return ((d[0] as number) | ((d[1] as number) << 8) | ((d[2] as number) << 16) | ((d[3] as number) << 24)) >>> 0;
}
