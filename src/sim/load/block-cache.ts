/**
 * A node's prefix cache in the W7 simulation: chained hashes of 16-token blocks, evicted
 * least-recently-used by count (the node's KV reserve in blocks). A prompt's cached prefix is
 * the longest run of its leading blocks present, as vLLM's and SGLang's caches match.
 */
import { BLOCK_TOKENS } from './prefix-constants.js';

/** Chained hashes of every full {@link BLOCK_TOKENS}-token block of `ids` (53-bit numbers, deterministic). */
export function blockHashes(ids: Uint32Array, blockTokens: number = BLOCK_TOKENS): Float64Array {
  const n = Math.floor(ids.length / blockTokens);
  const out = new Float64Array(n);
  let a = 0x811c9dc5;
  let b = 0x9e3779b9;
  for (let k = 0; k < n; k++) {
    for (let j = k * blockTokens; j < (k + 1) * blockTokens; j++) {
      const x = ids[j] as number;
      a = Math.imul(a ^ x, 0x01000193) >>> 0;
      b = Math.imul(b ^ (x + 0x7f4a7c15), 0x85ebca6b) >>> 0;
      b ^= b >>> 13;
    }
    out[k] = (a >>> 0) * 2097152 + (b & 0x1fffff);
  }
  return out;
}

/** Who hears a cache's changes (a precise engine's KV events): blocks `from` on of an insert stored, a block evicted. */
export interface BlockCacheObserver {
  stored(hashes: Float64Array, from: number): void;
  removed(hash: number): void;
}

/** An LRU set of block hashes with a capacity in blocks. */
export class BlockCache {
  private readonly blocks = new Map<number, true>();
  constructor(readonly capacity: number) {}

  /** Blocks held now. */
  get size(): number {
    return this.blocks.size;
  }

  /** Whether the block is held (not touching it). */
  has(hash: number): boolean {
    return this.blocks.has(hash);
  }

  /** Leading blocks of `hashes` held, without touching them. */
  peek(hashes: Float64Array): number {
    let k = 0;
    while (k < hashes.length && this.blocks.has(hashes[k] as number)) k++;
    return k;
  }

  /** Leading blocks of `hashes` held; marks them used. */
  match(hashes: Float64Array): number {
    const k = this.peek(hashes);
    for (let i = 0; i < k; i++) this.touch(hashes[i] as number);
    return k;
  }

  /**
   * Holds every block of `hashes` (most recently used last), evicting the least recently used
   * beyond capacity. `observer` hears the blocks from the first one not held on (each after its
   * parent: those after a new block are linked to the prompt again), then each eviction.
   */
  insert(hashes: Float64Array, observer?: BlockCacheObserver): void {
    let from = hashes.length;
    if (observer !== undefined) for (let i = 0; i < hashes.length && from === hashes.length; i++) if (!this.blocks.has(hashes[i] as number)) from = i;
    for (let i = 0; i < hashes.length; i++) this.touch(hashes[i] as number);
    if (from < hashes.length) observer?.stored(hashes, from);
    for (const h of this.blocks.keys()) {
      if (this.blocks.size <= this.capacity) break;
      this.blocks.delete(h);
      observer?.removed(h);
    }
  }

  private touch(h: number): void {
    this.blocks.delete(h);
    this.blocks.set(h, true);
  }
}
