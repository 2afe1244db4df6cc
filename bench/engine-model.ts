/**
 * The generated model the engine benches run (engine-decode.ts, completion-split.ts): 16 layers
 * of hidden 768, 12 heads (4 kv), MLP 2048 — 100.7 M parameters, 403 MB in f32 — or, with
 * `BENCH_QUICK=1`, a 4-layer model of hidden 256 for a quick look.
 */
import type { MakeModelOptions } from '../src/model/make-model.js';

/** Whether `BENCH_QUICK=1` asks for the small model and fewer steps. */
export const QUICK = process.env['BENCH_QUICK'] === '1';

/** make-model's options for the bench model. */
export const ENGINE_MODEL: MakeModelOptions = QUICK
  ? { layers: 4, hidden: 256, heads: 8, kvHeads: 4, intermediate: 704, seed: 5 }
  : { layers: 16, hidden: 768, heads: 12, kvHeads: 4, intermediate: 2048, seed: 5 };

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
