/**
 * The stage wire's binary message (docs/engine.md, "Frames"): a small JSON header for the control
 * fields, then typed tensors in length-prefixed frames, all integers little-endian:
 *
 *     "HSW1"  u32 headerBytes  header (UTF-8 JSON object, space-padded to 4 bytes)
 *     u32 tensorCount
 *     per tensor: u8 dtype  u8 rank  u16 0  u32 dims[rank]  u32 dataBytes  data  (zero-padded to 4 bytes)
 *
 * Every length is checked against the bytes there are and against the receiver's bounds before
 * anything is allocated; decoding returns views of the message's bytes (no copy).
 */
import { ServeError } from './serve-error.js';
import { DTYPE_BYTES, elementsOf, type DType, type Tensor } from './tensor.js';

/** The content type of a stage message. */
export const FRAME_CONTENT_TYPE = 'application/vnd.hecate.stage';
/** The first four bytes of every message: "HSW1". */
export const FRAME_MAGIC = 0x31575348;
/** Dtype codes on the wire. */
export const DTYPE_CODES: Readonly<Record<DType, number>> = Object.freeze({ f32: 1, f16: 2, bf16: 3, i32: 4, u32: 5 });
const DTYPES: readonly (DType | undefined)[] = [undefined, 'f32', 'f16', 'bf16', 'i32', 'u32'];
/** Most dimensions a tensor has. */
export const MAX_RANK = 4;

/** What a receiver accepts of one message; each refusal names the field at fault. */
export interface FrameBounds {
  /** Bytes of the whole message. */
  readonly maxBytes: number;
  /** Bytes of the JSON header. */
  readonly maxHeaderBytes: number;
  /** Tensors after the header. */
  readonly maxTensors: number;
  /** What the message calls its tensors in refusals. @defaultValue `tensors`, `tensors/i` */
  readonly names?: { readonly all: string; tensor(i: number): string };
}

/** A decoded message: its header object and its tensors (views of the message's bytes). */
export interface Frame {
  readonly header: Record<string, unknown>;
  readonly tensors: readonly Tensor[];
}

const pad4 = (n: number): number => (n + 3) & ~3;

/** Bytes `tensor` takes on the wire. */
export function tensorFrameBytes(tensor: Tensor): number {
  return 8 + 4 * tensor.shape.length + pad4(tensor.data.byteLength);
}

/**
 * One message of `header` and `tensors`, in one allocation.
 * @throws {ServeError} 400 naming `tensors/i` when a tensor's bytes do not match its dtype and shape
 */
export function encodeFrame(header: object, tensors: readonly Tensor[]): Uint8Array {
  // The JSON written straight into the message, and a plain loop: this runs twice a stage call (docs/performance.md, "Data plane").
  const json = JSON.stringify(header);
  const jsonBytes = Buffer.byteLength(json, 'utf8');
  const headerBytes = pad4(jsonBytes);
  let size = 8 + headerBytes + 4;
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i] as Tensor;
    checkTensor(t, 'tensors', i);
    size += tensorFrameBytes(t);
  }
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(FRAME_MAGIC, 0);
  out.writeUInt32LE(headerBytes, 4);
  out.write(json, 8, 'utf8');
  out.fill(0x20, 8 + jsonBytes, 8 + headerBytes);
  let at = 8 + headerBytes;
  out.writeUInt32LE(tensors.length, at);
  at += 4;
  for (const t of tensors) {
    out[at] = DTYPE_CODES[t.dtype];
    out[at + 1] = t.shape.length;
    out.writeUInt16LE(0, at + 2);
    at += 4;
    for (const d of t.shape) {
      out.writeUInt32LE(d, at);
      at += 4;
    }
    out.writeUInt32LE(t.data.byteLength, at);
    at += 4;
    out.set(t.data, at);
    const end = at + pad4(t.data.byteLength);
    out.fill(0, at + t.data.byteLength, end);
    at = end;
  }
  return out;
}

/**
 * Reads one message, refusing (400 `InvalidRequest`, naming the field) a wrong magic, any length
 * past the bytes there are or past `bounds`, an unknown dtype, a rank over {@link MAX_RANK}, data
 * whose length is not its shape's, and trailing bytes.
 */
export function decodeFrame(bytes: Uint8Array, bounds: FrameBounds): Frame {
  const bad = (field: string, what: string) => new ServeError('InvalidRequest', 400, `${field}: ${what}`, { field });
  if (bytes.byteLength > bounds.maxBytes) throw bad('body', `${bytes.byteLength} bytes, over the bound of ${bounds.maxBytes}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (at: number, n: number, field: string, what: string): void => {
    if (at + n > bytes.byteLength) throw bad(field, `truncated: ${what} needs ${n} bytes at offset ${at}, the message has ${bytes.byteLength}`);
  };
  need(0, 8, 'body', 'the magic and header length');
  if (view.getUint32(0, true) !== FRAME_MAGIC) throw bad('body', 'not a stage message (it must start with "HSW1")');
  const headerBytes = view.getUint32(4, true);
  if (headerBytes > bounds.maxHeaderBytes) throw bad('header', `${headerBytes} bytes, over the bound of ${bounds.maxHeaderBytes}`);
  need(8, headerBytes, 'header', 'the header');
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + 8, headerBytes).toString('utf8'));
  } catch {
    throw bad('header', 'must be JSON');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw bad('header', 'must be a JSON object');
  let at = 8 + headerBytes;
  need(at, 4, 'tensors', 'the tensor count');
  const count = view.getUint32(at, true);
  at += 4;
  const names = bounds.names ?? { all: 'tensors', tensor: (i: number) => `tensors/${i}` };
  if (count > bounds.maxTensors) throw bad(names.all, `${count} tensors, over the bound of ${bounds.maxTensors}`);
  const tensors: Tensor[] = [];
  let previous: readonly number[] | undefined;
  for (let i = 0; i < count; i++) {
    const field = (): string => names.tensor(i); // named only when refused: a replay may carry thousands
    if (at + 4 > bytes.byteLength) need(at, 4, field(), 'its dtype and rank');
    const dtype = DTYPES[bytes[at] as number];
    const rank = bytes[at + 1] as number;
    if (dtype === undefined) throw bad(`${field()}/dtype`, `unknown dtype code ${bytes[at]} (1 f32, 2 f16, 3 bf16, 4 i32, 5 u32)`);
    if (rank > MAX_RANK) throw bad(`${field()}/shape`, `rank ${rank}, over ${MAX_RANK}`);
    at += 4;
    if (at + 4 * rank + 4 > bytes.byteLength) need(at, 4 * rank + 4, `${field()}/shape`, 'its dimensions and data length');
    const dims: number[] = [];
    for (let r = 0; r < rank; r++, at += 4) dims.push(view.getUint32(at, true));
    // A replay of thousands of one shape shares one frozen shape array (a digest replay is all [1, 1]).
    const shape: readonly number[] = previous !== undefined && previous.length === rank && previous.every((d, r) => d === dims[r]) ? previous : Object.freeze(dims);
    previous = shape;
    const dataBytes = view.getUint32(at, true);
    at += 4;
    const expected = elementsOf(shape) * DTYPE_BYTES[dtype];
    if (dataBytes !== expected) throw bad(`${field()}/data`, `${dataBytes} bytes, but ${dtype} [${shape.join(', ')}] takes ${expected}`);
    if (at + pad4(dataBytes) > bytes.byteLength) need(at, pad4(dataBytes), `${field()}/data`, 'its data');
    tensors.push({ dtype, shape, data: new Uint8Array(bytes.buffer, bytes.byteOffset + at, dataBytes) });
    at += pad4(dataBytes);
  }
  if (at !== bytes.byteLength) throw bad('body', `${bytes.byteLength - at} bytes after the last tensor`);
  return { header: header as Record<string, unknown>, tensors };
}

/** Refuses a tensor whose bytes are not its shape's (400 naming `field`, or `field/index` with an index). */
export function checkTensor(t: Tensor, field: string, index?: number): void {
  const named = (): string => (index === undefined ? field : `${field}/${index}`);
  if (DTYPE_CODES[t.dtype] === undefined) throw new ServeError('InvalidRequest', 400, `${named()}/dtype: unknown dtype "${String(t.dtype)}"`, { field: `${named()}/dtype` });
  if (t.shape.length > MAX_RANK || t.shape.some((d) => !Number.isInteger(d) || d < 0 || d > 0xffff_ffff)) throw new ServeError('InvalidRequest', 400, `${named()}/shape: [${t.shape.join(', ')}] is not up to ${MAX_RANK} 32-bit dimensions`, { field: `${named()}/shape` });
  const expected = elementsOf(t.shape) * DTYPE_BYTES[t.dtype];
  if (t.data.byteLength !== expected) throw new ServeError('InvalidRequest', 400, `${named()}/data: ${t.data.byteLength} bytes, but ${t.dtype} [${t.shape.join(', ')}] takes ${expected}`, { field: `${named()}/data` });
}
