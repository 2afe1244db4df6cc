/**
 * The arithmetic of one Llama token row besides the matrix products (wasm-kernels.ts), as Hugging
 * Face's `LlamaForCausalLM` defines it. Every function computes one row, with one accumulation
 * order per output element whatever else is computed beside it: a token's row is the same bits in
 * a prefill, a decode or a replay. Accumulation is in JavaScript's f64, rounded to f32 when stored.
 */

/** RMSNorm of one row: `out = weight ⊙ x / √(mean(x²) + eps)`. */
export function rmsNorm(x: Float32Array, xOffset: number, weight: Float32Array, eps: number, out: Float32Array, outOffset: number): void {
  const n = weight.length;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const v = x[xOffset + i] as number;
    sum += v * v;
  }
  const scale = 1 / Math.sqrt(sum / n + eps);
  for (let i = 0; i < n; i++) out[outOffset + i] = (weight[i] as number) * ((x[xOffset + i] as number) * scale);
}

/** The rotary tables of one position: cos and sin of `position · θ^(-2j/d)` for j < d/2. */
export interface RotaryRow {
  readonly cos: Float64Array;
  readonly sin: Float64Array;
}

/** The inverse frequencies `θ^(-2j/d)`, j < d/2, as Hugging Face's default rotary embedding. */
export function inverseFrequencies(headDim: number, theta: number): Float64Array {
  const half = headDim / 2;
  const out = new Float64Array(half);
  for (let j = 0; j < half; j++) out[j] = 1 / Math.pow(theta, (2 * j) / headDim);
  return out;
}

/** The rotary row of `position`. */
export function rotaryRow(position: number, inverse: Float64Array): RotaryRow {
  const cos = new Float64Array(inverse.length);
  const sin = new Float64Array(inverse.length);
  for (let j = 0; j < inverse.length; j++) {
    const angle = position * (inverse[j] as number);
    cos[j] = Math.cos(angle);
    sin[j] = Math.sin(angle);
  }
  return { cos, sin };
}

/**
 * Rotates `heads` heads of `headDim` in place, HF's rotate-half layout: element j pairs with
 * j + d/2, `x' = x·cos + rotate_half(x)·sin` where `rotate_half(x) = [-x₂, x₁]`.
 */
export function applyRotary(x: Float32Array, offset: number, heads: number, headDim: number, row: RotaryRow): void {
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    const base = offset + h * headDim;
    for (let j = 0; j < half; j++) {
      const a = x[base + j] as number;
      const b = x[base + j + half] as number;
      const c = row.cos[j] as number;
      const s = row.sin[j] as number;
      x[base + j] = a * c - b * s;
      x[base + j + half] = b * c + a * s;
    }
  }
}

/** Shapes of grouped-query attention. */
export interface AttentionShape {
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

/**
 * Causal grouped-query attention of one query row over cached positions `[0, length)`: per head,
 * `softmax(q·kᵀ / √d) · v` with head h reading kv head `h / (heads / kvHeads)`. `keys` and
 * `values` are `[positions, kvHeads, headDim]`. `scores` is scratch of at least `length`.
 */
export function attendRow(q: Float32Array, qOffset: number, keys: Float32Array, values: Float32Array, length: number, shape: AttentionShape, scores: Float64Array, out: Float32Array, outOffset: number): void {
  const { heads, kvHeads, headDim } = shape;
  const group = heads / kvHeads;
  const rowStride = kvHeads * headDim;
  const scale = 1 / Math.sqrt(headDim);
  for (let h = 0; h < heads; h++) {
    const qBase = qOffset + h * headDim;
    const kvBase = Math.floor(h / group) * headDim;
    let max = -Infinity;
    for (let p = 0; p < length; p++) {
      const kBase = p * rowStride + kvBase;
      let dot = 0;
      for (let d = 0; d < headDim; d++) dot += (q[qBase + d] as number) * (keys[kBase + d] as number);
      const score = dot * scale;
      scores[p] = score;
      if (score > max) max = score;
    }
    let total = 0;
    for (let p = 0; p < length; p++) {
      const e = Math.exp((scores[p] as number) - max);
      scores[p] = e;
      total += e;
    }
    const oBase = outOffset + h * headDim;
    for (let d = 0; d < headDim; d++) {
      let acc = 0;
      for (let p = 0; p < length; p++) acc += (scores[p] as number) * (values[p * rowStride + kvBase + d] as number);
      out[oBase + d] = acc / total;
    }
  }
}

/** SwiGLU's gate in place: `gate[i] = silu(gate[i]) · up[i]`, `silu(x) = x / (1 + e^(-x))`. */
export function swiGlu(gate: Float32Array, up: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const g = gate[i] as number;
    gate[i] = (g / (1 + Math.exp(-g))) * (up[i] as number);
  }
}
