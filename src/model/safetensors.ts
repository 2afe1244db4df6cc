/**
 * The safetensors format, read: the JSON header, then only the tensors asked for, each by its file
 * offset (an agent reads only its own layers' bytes). F32, F16 and BF16 are widened to a
 * Float32Array (docs/engine-reference.md).
 */
import { open, type FileHandle } from 'node:fs/promises';
import { bf16ToF32, f16ToF32 } from './half-float.js';
import { ModelError } from './model-error.js';

/** The element types read, as safetensors names them. */
export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

/** Bytes one element of each {@link SafetensorsDtype} takes. */
export const SAFETENSORS_DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

/** One tensor's entry in a header: dtype, shape, and its byte range in the file. */
export interface SafetensorsEntry {
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  /** Absolute file offsets, half-open. */
  readonly begin: number;
  readonly end: number;
}

/** A parsed header: each tensor's entry, and the free-form `__metadata__`. */
export interface SafetensorsHeader {
  readonly path: string;
  readonly tensors: ReadonlyMap<string, SafetensorsEntry>;
  readonly metadata: Readonly<Record<string, string>>;
}

/** The header JSON may not be larger than this (the format's own limit is 100 MB). */
const MAX_HEADER_BYTES = 100_000_000;

async function readExactly(handle: FileHandle, length: number, position: number, path: string): Promise<Uint8Array> {
  const buffer = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) throw new ModelError('InvalidFile', `${path}: ends at byte ${position + done}, expected ${length} bytes from ${position}`);
    done += bytesRead;
  }
  return buffer;
}

function parseEntry(name: string, raw: unknown, dataStart: number, fileSize: number, path: string): SafetensorsEntry {
  const entry = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  if (entry.dtype !== 'F32' && entry.dtype !== 'F16' && entry.dtype !== 'BF16') {
    throw new ModelError('InvalidTensor', `${path}: tensor "${name}" has dtype ${JSON.stringify(entry.dtype)}; F32, F16 and BF16 are read`);
  }
  const shape = entry.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) throw new ModelError('InvalidFile', `${path}: tensor "${name}" has shape ${JSON.stringify(shape)}`);
  const offsets = entry.data_offsets;
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o) && o >= 0)) {
    throw new ModelError('InvalidFile', `${path}: tensor "${name}" has data_offsets ${JSON.stringify(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  const elements = (shape as number[]).reduce((a, b) => a * b, 1);
  if (end - begin !== elements * SAFETENSORS_DTYPE_BYTES[entry.dtype] || dataStart + end > fileSize) {
    throw new ModelError('InvalidFile', `${path}: tensor "${name}" spans bytes [${begin}, ${end}) of the data, which does not fit its shape ${JSON.stringify(shape)} ${entry.dtype} or the file`);
  }
  return { dtype: entry.dtype, shape: shape as number[], begin: dataStart + begin, end: dataStart + end };
}

/**
 * Reads a safetensors file's header (not its tensors).
 * @throws {ModelError} `InvalidFile` when the file is absent, short or its header malformed;
 *   `InvalidTensor` for a dtype other than F32, F16, BF16.
 */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new ModelError('InvalidFile', `${path}: cannot be opened (${(error as Error).message})`, { cause: error });
  }
  try {
    const size = (await handle.stat()).size;
    const prefix = await readExactly(handle, 8, 0, path);
    const headerLength = Number(new DataView(prefix.buffer).getBigUint64(0, true));
    if (headerLength > MAX_HEADER_BYTES || 8 + headerLength > size) throw new ModelError('InvalidFile', `${path}: header length ${headerLength} does not fit the file (${size} bytes)`);
    const text = new TextDecoder().decode(await readExactly(handle, headerLength, 8, path));
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new ModelError('InvalidFile', `${path}: header is not JSON (${(error as Error).message})`, { cause: error });
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ModelError('InvalidFile', `${path}: header is not a JSON object`);
    const tensors = new Map<string, SafetensorsEntry>();
    let metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(raw)) {
      if (name === '__metadata__') metadata = { ...(value as Record<string, string>) };
      else tensors.set(name, parseEntry(name, value, 8 + headerLength, size, path));
    }
    return { path, tensors, metadata };
  } finally {
    await handle.close();
  }
}

/** Widens `bytes` of `dtype` (little-endian) to f32. */
export function decodeElements(bytes: Uint8Array, dtype: SafetensorsDtype): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.byteLength / SAFETENSORS_DTYPE_BYTES[dtype];
  const out = new Float32Array(n);
  if (dtype === 'F32') for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
  else if (dtype === 'F16') for (let i = 0; i < n; i++) out[i] = f16ToF32(view.getUint16(2 * i, true));
  else for (let i = 0; i < n; i++) out[i] = bf16ToF32(view.getUint16(2 * i, true));
  return out;
}

/**
 * Reads one tensor's bytes from its file (only those bytes) and widens them to f32.
 * @throws {ModelError} `InvalidFile` when the file is shorter than its header says.
 */
export async function readSafetensorsTensor(path: string, entry: SafetensorsEntry): Promise<Float32Array> {
  const handle = await open(path, 'r');
  try {
    return decodeElements(await readExactly(handle, entry.end - entry.begin, entry.begin, path), entry.dtype);
  } finally {
    await handle.close();
  }
}
