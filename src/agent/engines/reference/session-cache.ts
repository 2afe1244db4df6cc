/**
 * One session's KV cache on one span: per layer, the keys and values of every token so far
 * (`[positions, kvHeads, headDim]`, f32), grown in blocks of {@link KV_BLOCK_TOKENS} tokens, and
 * how many tokens each step appended (so a retried step truncates back to where it began).
 */

/** Tokens the cache grows by at a time. */
export const KV_BLOCK_TOKENS = 32;

/** A session's keys and values on one span. */
export class SessionCache {
  readonly sessionId: string;
  readonly spanKey: string;
  /** Floats of one token's keys (or values) in one layer: kvHeads × headDim. */
  readonly rowFloats: number;
  readonly keys: Float32Array[];
  readonly values: Float32Array[];
  /** Tokens held (the next token's position). */
  length = 0;
  /** Tokens each step appended, in step order. */
  readonly stepTokens: number[] = [];
  /** Steps running on it now: it is not evicted while one does. */
  busy = 0;
  /** On a first stage: the token ids held, and the hashes of their whole blocks in the engine's feed (kv-event-feed.ts). */
  readonly ids: number[] = [];
  readonly blocks: string[] = [];

  constructor(sessionId: string, spanKey: string, layers: number, rowFloats: number) {
    this.sessionId = sessionId;
    this.spanKey = spanKey;
    this.rowFloats = rowFloats;
    this.keys = Array.from({ length: layers }, () => new Float32Array(0));
    this.values = Array.from({ length: layers }, () => new Float32Array(0));
  }

  /** Tokens the buffers have room for. */
  capacity(): number {
    return (this.keys[0]?.length ?? 0) / this.rowFloats;
  }

  /** Bytes the buffers take now. */
  bytes(): number {
    return this.bytesFor(this.capacity());
  }

  /** Bytes the buffers would take holding `tokens`, at the capacity growth gives. */
  bytesAt(tokens: number): number {
    return this.bytesFor(Math.max(this.capacity(), Math.ceil(tokens / KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS));
  }

  private bytesFor(capacity: number): number {
    return 2 * this.keys.length * capacity * this.rowFloats * 4;
  }

  /** Makes room for `tokens` in every layer (copying what is held). */
  reserve(tokens: number): void {
    if (tokens <= this.capacity()) return;
    const capacity = Math.ceil(tokens / KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS;
    for (let l = 0; l < this.keys.length; l++) {
      const k = new Float32Array(capacity * this.rowFloats);
      k.set((this.keys[l] as Float32Array).subarray(0, this.length * this.rowFloats));
      this.keys[l] = k;
      const v = new Float32Array(capacity * this.rowFloats);
      v.set((this.values[l] as Float32Array).subarray(0, this.length * this.rowFloats));
      this.values[l] = v;
    }
  }

  /** Forgets steps `step` and later (a retried step starts again from where it began). */
  truncateToStep(step: number): void {
    let tokens = 0;
    for (let s = 0; s < step; s++) tokens += this.stepTokens[s] as number;
    this.stepTokens.length = step;
    this.length = tokens;
  }
}
