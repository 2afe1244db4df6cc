import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { builtKernels } from '../../../scripts/build-wasm.mjs';
import { WasmKernels } from '../../../src/agent/engines/reference/wasm-kernels.js';
import { mulberry32 } from '../../../src/core/random.js';

/** kernels.wat's order in f32, written out in JavaScript: partial sums over i mod 16, then the rest. */
function expected(w: Float32Array, rows: number, cols: number, x: Float32Array): Float32Array {
  const f = Math.fround;
  const y = new Float32Array(rows);
  const end16 = cols & ~15;
  const end4 = cols & ~3;
  for (let o = 0; o < rows; o++) {
    const a = [0, 1, 2, 3].map(() => [0, 0, 0, 0]);
    let i = 0;
    for (; i < end16; i += 16) for (let v = 0; v < 4; v++) for (let l = 0; l < 4; l++) a[v]![l] = f(a[v]![l]! + f(w[o * cols + i + 4 * v + l]! * x[i + 4 * v + l]!));
    for (; i < end4; i += 4) for (let l = 0; l < 4; l++) a[0]![l] = f(a[0]![l]! + f(w[o * cols + i + l]! * x[i + l]!));
    const lanes = [0, 1, 2, 3].map((l) => f(f(a[0]![l]! + a[1]![l]!) + f(a[2]![l]! + a[3]![l]!)));
    let s = f(f(lanes[0]! + lanes[1]!) + f(lanes[2]! + lanes[3]!));
    for (; i < cols; i++) s = f(s + f(w[o * cols + i]! * x[i]!));
    y[o] = s;
  }
  return y;
}

describe('WasmKernels', () => {
  it('ships the build of kernels.wat (run node scripts/build-wasm.mjs after editing it)', async () => {
    expect(readFileSync('src/agent/engines/reference/kernels-wasm.ts', 'utf8')).toBe(await builtKernels());
  });

  for (const [rows, cols] of [[5, 64], [7, 37], [3, 3], [2, 20]] as const) {
    it(`computes a ${rows}×${cols} product in kernels.wat's fixed order, bit for bit`, () => {
      const next = mulberry32(rows * 100 + cols);
      const draw = (n: number) => Float32Array.from({ length: n }, () => next() / 2 ** 31 - 1);
      const w = draw(rows * cols);
      const x = draw(cols + 3);
      const kernels = new WasmKernels();
      kernels.store(draw(9), 3, 3, 'padding'); // an unaligned neighbour before the matrix
      const m = kernels.store(w, rows, cols, 'w');
      const y = new Float32Array(rows + 2);
      kernels.matVec(m, x, 3, y, 2);
      expect([...y.subarray(2)]).toEqual([...expected(w, rows, cols, x.subarray(3))]);
      expect([...y.subarray(0, 2)]).toEqual([0, 0]);
      const row = new Float32Array(cols);
      kernels.row(m, rows - 1, row, 0);
      expect(row).toEqual(w.subarray((rows - 1) * cols));
    });
  }

  it('grows its memory past the first page and refuses past 4 GiB naming the tensor', () => {
    const kernels = new WasmKernels();
    const big = new Float32Array(300_000).fill(1);
    const m = kernels.store(big, 1, big.length, 'big');
    const y = new Float32Array(1);
    kernels.matVec(m, new Float32Array(big.length).fill(0.5), 0, y, 0);
    expect(y[0]).toBe(150_000);
    expect(kernels.matrixBytes).toBe(1_200_000);
    const huge = { length: 2 ** 30 + 1, byteLength: 2 ** 32 + 4 } as unknown as Float32Array;
    expect(() => kernels.store(huge, 1, 2 ** 30 + 1, 'tensor "lm_head.weight"')).toThrow(/tensor "lm_head.weight" does not fit one engine's 4 GiB WebAssembly memory/);
  });
});
