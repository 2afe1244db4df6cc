/**
 * A tensor as the stage wire carries it: a dtype, a shape and its little-endian bytes. Token ids
 * travel as `i32` `[tokens]`, activations as `f32` / `f16` / `bf16` `[tokens, hidden]`, the
 * stand-in digest as `u32` `[1, 1]` (docs/engine.md).
 */

/** Element types the wire carries. */
export type DType = 'f32' | 'f16' | 'bf16' | 'i32' | 'u32';

/** Bytes one element of each {@link DType} takes. */
export const DTYPE_BYTES: Readonly<Record<DType, number>> = { f32: 4, f16: 2, bf16: 2, i32: 4, u32: 4 };

/** A dense, row-major tensor; `data.byteLength` is the product of `shape` times its dtype's bytes. */
export interface Tensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Little-endian element bytes, row-major. */
  readonly data: Uint8Array;
}

/** Elements a shape holds (1 for `[]`). */
export function elementsOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** A `f32` tensor over a Float32Array's bytes (no copy). */
export function f32Tensor(values: Float32Array, shape: readonly number[]): Tensor {
  return { dtype: 'f32', shape: [...shape], data: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) };
}

/** An `i32` tensor of token ids, shape `[ids.length]`. */
export function tokenTensor(ids: readonly number[]): Tensor {
  const values = Int32Array.from(ids);
  return { dtype: 'i32', shape: [ids.length], data: new Uint8Array(values.buffer) };
}
