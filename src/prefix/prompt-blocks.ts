/**
 * A prompt cut into fixed-size blocks, each named by a chained hash (docs/prefix-cache.md): a
 * block's key depends on its own content, on the key of the block before it and on the model id,
 * so two prompts share the key of block `k` only when they share everything up to its end, for
 * the same model. Text is cut in characters (UTF-16 code units), token ids in ids; the two start
 * from different seeds, so a text prompt and an id prompt never share a key. Only whole blocks
 * are named: a trailing partial block is never cached.
 *
 * The hash is not cryptographic: four 32-bit `Math.imul` lanes per block (independent, so the
 * processor runs them side by side), mixed into a 53-bit key, exact as a JavaScript number. A
 * text prompt whose characters are all ASCII is read through `TextEncoder.encodeInto` into bytes
 * and hashed four characters per 32-bit word; any other block packs two code units per word.
 * Which packing a block gets depends on that block's characters only, so a shared prefix has the
 * same keys whatever follows it. Pure and platform-neutral: no `node:` module. The prompt's
 * type and its check stay in the root (src/core/prompt.ts); this hashing is `hecate-swarm/prefix`'s.
 */
import type { Prompt } from '../core/prompt.js';

/** Where a prompt's blocks are written: the keys of its whole blocks, in chain order. */
export interface PromptBlocks {
  /** Block keys (53-bit integers), `count` of them from index 0. */
  keys: Float64Array;
  count: number;
  /** The prompt's length in its own units (characters or ids). */
  units: number;
  /** Whether the prompt is text (characters) or token ids. */
  text: boolean;
}

const TEXT_SEED = 0x3c6ef372;
const IDS_SEED = 0x5be0cd19;

let bytes = new Uint8Array(1 << 16);
let words = new Int32Array(bytes.buffer);
const encoder: { encodeInto(s: string, into: Uint8Array): { read: number; written: number } } | undefined =
  typeof TextEncoder === 'function' ? new TextEncoder() : undefined;
/** Byte-packed words read in little-endian order; on a big-endian host every block takes the portable path. */
const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** A 32-bit hash of a string (the model id), computed once per model by the caller. */
export function stringSeed(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return fmix(h);
}

function fmix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

/** Keys out of four lanes and the previous key's low word: the block's 53-bit key; `out.prev` the next block's chain word. */
function finish(a: number, b: number, c: number, d: number, out: PromptBlocks, n: number): number {
  let h = a ^ ((b << 7) | (b >>> 25)) ^ ((c << 13) | (c >>> 19)) ^ ((d << 19) | (d >>> 13));
  h = fmix(h);
  let g = (a + b + c + d) | 0;
  g = fmix(g ^ h);
  out.keys[n] = (h >>> 0) + (g & 0x1fffff) * 4294967296;
  return h;
}

function grow(out: PromptBlocks, count: number): void {
  if (out.keys.length < count) out.keys = new Float64Array(Math.max(count, out.keys.length * 2));
}

/**
 * Cuts `prompt` into blocks of `blockSize` units and writes their chained keys into `out`
 * (growing its array as needed). `modelSeed` is {@link stringSeed} of the model id.
 */
export function promptBlocks(prompt: Prompt, modelSeed: number, blockSize: number, out: PromptBlocks): PromptBlocks {
  const units = prompt.length;
  const count = Math.floor(units / blockSize);
  grow(out, count);
  out.count = count;
  out.units = units;
  if (typeof prompt === 'string') {
    out.text = true;
    textBlocks(prompt, (modelSeed ^ TEXT_SEED) | 0, blockSize, count, out);
  } else {
    out.text = false;
    idBlocks(prompt, (modelSeed ^ IDS_SEED) | 0, blockSize, count, out);
  }
  return out;
}

const one = emptyBlocks();

/**
 * The key of one block of token ids after the block keyed `parentKey` (none: the prompt's first),
 * for the model of `modelSeed`: the key {@link promptBlocks} gives that block of an id prompt cut
 * at `ids.length` ids a block. How a precise copy's reported blocks enter the index.
 */
export function idBlockKey(parentKey: number | undefined, modelSeed: number, ids: readonly number[]): number {
  // A key's low 32 bits are the chain word the next block starts from (finish).
  idBlocks(ids, parentKey === undefined ? (modelSeed ^ IDS_SEED) | 0 : (parentKey % 4294967296) | 0, ids.length, 1, one);
  return one.keys[0] as number;
}

function idBlocks(ids: readonly number[], seed: number, size: number, count: number, out: PromptBlocks): void {
  let prev = seed;
  let i = 0;
  for (let k = 0; k < count; k++) {
    let a = prev ^ 0x9e3779b1, b = prev ^ 0x85ebca77, c = prev ^ 0xc2b2ae3d, d = prev ^ 0x27d4eb2f;
    const end = i + size;
    for (; i + 4 <= end; i += 4) {
      a = Math.imul(a ^ (ids[i] as number), 0x01000193);
      b = Math.imul(b ^ (ids[i + 1] as number), 0x01000193);
      c = Math.imul(c ^ (ids[i + 2] as number), 0x01000193);
      d = Math.imul(d ^ (ids[i + 3] as number), 0x01000193);
    }
    for (; i < end; i++) a = Math.imul(a ^ (ids[i] as number), 0x01000193);
    prev = finish(a, b, c, d, out, k);
  }
}

function textBlocks(s: string, seed: number, size: number, count: number, out: PromptBlocks): void {
  // Fast path: the whole text is ASCII, so its UTF-8 bytes are its characters, four to a word.
  if (encoder !== undefined && littleEndian && size % 16 === 0 && count > 0) {
    if (bytes.length < s.length + 16) {
      bytes = new Uint8Array(Math.max((s.length + 19) & ~3, bytes.length * 2)); // whole 32-bit words
      words = new Int32Array(bytes.buffer);
    }
    const { read, written } = encoder.encodeInto(s, bytes);
    if (read === s.length && written === s.length) {
      asciiBlocks(seed, size >> 2, count, out);
      return;
    }
  }
  let prev = seed;
  for (let k = 0; k < count; k++) {
    const start = k * size;
    const end = start + size;
    let ascii = size % 16 === 0;
    for (let i = start; ascii && i < end; i++) if (s.charCodeAt(i) > 0x7f) ascii = false;
    let a = prev ^ 0x9e3779b1, b = prev ^ 0x85ebca77, c = prev ^ 0xc2b2ae3d, d = prev ^ 0x27d4eb2f;
    if (ascii) {
      // The same words the fast path reads: four characters, little-endian.
      for (let i = start; i < end; i += 16) {
        a = Math.imul(a ^ word4(s, i), 0x01000193);
        b = Math.imul(b ^ word4(s, i + 4), 0x01000193);
        c = Math.imul(c ^ word4(s, i + 8), 0x01000193);
        d = Math.imul(d ^ word4(s, i + 12), 0x01000193);
      }
    } else {
      // Two code units per word; a different first lane start, so such a block never meets an ASCII one.
      a ^= 0x6a09e667;
      let i = start;
      for (; i + 8 <= end; i += 8) {
        a = Math.imul(a ^ (s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16)), 0x01000193);
        b = Math.imul(b ^ (s.charCodeAt(i + 2) | (s.charCodeAt(i + 3) << 16)), 0x01000193);
        c = Math.imul(c ^ (s.charCodeAt(i + 4) | (s.charCodeAt(i + 5) << 16)), 0x01000193);
        d = Math.imul(d ^ (s.charCodeAt(i + 6) | (s.charCodeAt(i + 7) << 16)), 0x01000193);
      }
      for (; i < end; i++) a = Math.imul(a ^ s.charCodeAt(i), 0x01000193);
    }
    prev = finish(a, b, c, d, out, k);
  }
}

function word4(s: string, i: number): number {
  return s.charCodeAt(i) | (s.charCodeAt(i + 1) << 8) | (s.charCodeAt(i + 2) << 16) | (s.charCodeAt(i + 3) << 24);
}

/** The fast path over the encoded bytes: `wordsPerBlock` words a block, a multiple of 4. */
function asciiBlocks(seed: number, wordsPerBlock: number, count: number, out: PromptBlocks): void {
  const w = words;
  let prev = seed;
  let i = 0;
  for (let k = 0; k < count; k++) {
    let a = prev ^ 0x9e3779b1, b = prev ^ 0x85ebca77, c = prev ^ 0xc2b2ae3d, d = prev ^ 0x27d4eb2f;
    const end = i + wordsPerBlock;
    for (; i < end; i += 4) {
      a = Math.imul(a ^ (w[i] as number), 0x01000193);
      b = Math.imul(b ^ (w[i + 1] as number), 0x01000193);
      c = Math.imul(c ^ (w[i + 2] as number), 0x01000193);
      d = Math.imul(d ^ (w[i + 3] as number), 0x01000193);
    }
    prev = finish(a, b, c, d, out, k);
  }
}

/** An empty {@link PromptBlocks} to reuse across calls. */
export function emptyBlocks(): PromptBlocks {
  return { keys: new Float64Array(256), count: 0, units: 0, text: true };
}
