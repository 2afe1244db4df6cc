/**
 * The safetensors format, written: a header padded to 8 bytes, then each tensor's elements in the
 * given order, narrowed from f32 to the tensor's dtype (round to nearest even).
 */
import { writeFile } from 'node:fs/promises';
import { f32ToBf16, f32ToF16 } from './half-float.js';
import { ModelError } from './model-error.js';
import { SAFETENSORS_DTYPE_BYTES, type SafetensorsDtype } from './safetensors.js';

/** A tensor to write: its f32 values are narrowed to `dtype`. */
export interface TensorToWrite {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  readonly values: Float32Array;
}

/** Narrows f32 values to `dtype`'s little-endian bytes. */
export function encodeElements(values: Float32Array, dtype: SafetensorsDtype): Uint8Array {
  const out = new Uint8Array(values.length * SAFETENSORS_DTYPE_BYTES[dtype]);
  const view = new DataView(out.buffer);
  if (dtype === 'F32') for (let i = 0; i < values.length; i++) view.setFloat32(4 * i, values[i] as number, true);
  else if (dtype === 'F16') for (let i = 0; i < values.length; i++) view.setUint16(2 * i, f32ToF16(values[i] as number), true);
  else for (let i = 0; i < values.length; i++) view.setUint16(2 * i, f32ToBf16(values[i] as number), true);
  return out;
}

/** A tensor's name, dtype and shape, without its values (for a header written ahead of them). */
export interface TensorSpec {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
}

/**
 * The 8-byte length and the header JSON (padded to 8 bytes) of a file holding `specs` in order;
 * each tensor's bytes follow in that order.
 * @throws {ModelError} `InvalidOptions` when a name repeats.
 */
export function safetensorsHeaderBytes(specs: readonly TensorSpec[], metadata: Readonly<Record<string, string>> = {}): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header['__metadata__'] = metadata;
  let offset = 0;
  for (const spec of specs) {
    if (spec.name in header) throw new ModelError('InvalidOptions', `tensor "${spec.name}" is given twice`);
    const bytes = spec.shape.reduce((a, b) => a * b, 1) * SAFETENSORS_DTYPE_BYTES[spec.dtype];
    header[spec.name] = { dtype: spec.dtype, shape: [...spec.shape], data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const text = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + text.byteLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.byteLength), true);
  out.set(text, 8);
  return out;
}

/**
 * The bytes of a safetensors file holding `tensors` (in order) and `metadata`.
 * @throws {ModelError} `InvalidOptions` when a tensor's values do not match its shape, or a name repeats.
 */
export function safetensorsBytes(tensors: readonly TensorToWrite[], metadata: Readonly<Record<string, string>> = {}): Uint8Array {
  const head = safetensorsHeaderBytes(tensors, metadata);
  const bodies = tensors.map((tensor) => {
    if (tensor.shape.reduce((a, b) => a * b, 1) !== tensor.values.length) throw new ModelError('InvalidOptions', `tensor "${tensor.name}": ${tensor.values.length} values for shape ${JSON.stringify(tensor.shape)}`);
    return encodeElements(tensor.values, tensor.dtype);
  });
  const out = new Uint8Array(head.byteLength + bodies.reduce((a, b) => a + b.byteLength, 0));
  out.set(head, 0);
  let at = head.byteLength;
  for (const body of bodies) {
    out.set(body, at);
    at += body.byteLength;
  }
  return out;
}

/** Writes {@link safetensorsBytes} to `path`. */
export async function writeSafetensors(path: string, tensors: readonly TensorToWrite[], metadata: Readonly<Record<string, string>> = {}): Promise<void> {
  await writeFile(path, safetensorsBytes(tensors, metadata));
}
