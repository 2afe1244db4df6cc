/**
 * The reference engine's matrices in one WebAssembly memory and the SIMD128 matrix-vector product
 * over them (kernels.wat, shipped built in kernels-wasm.ts). Each engine has its own memory: its
 * weights are copied in at load; a product copies its input vector in and its output out, both
 * O(rows + cols) against the O(rows · cols) product (docs/engine-reference.md).
 */
import { ReferenceEngineError } from './engine-error.js';
import { KERNELS_WASM_BASE64 } from './kernels-wasm.js';

/** A row-major `[rows, cols]` f32 matrix held in a {@link WasmKernels} memory. */
export interface WasmMatrix {
  /** Byte address in the memory. */
  readonly address: number;
  readonly rows: number;
  readonly cols: number;
}

/** The part of the WebAssembly JS API used here (the project's TypeScript libs leave the global's values untyped). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { readonly exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const PAGE = 65536;
/** wasm32's memory limit: 65536 pages of 64 KiB. */
const MAX_PAGES = 65536;
let compiled: object | undefined;

/** One engine's matrices and the product over them. */
export class WasmKernels {
  private readonly memory = new wasm.Memory({ initial: 1, maximum: MAX_PAGES });
  private readonly matvecExport: (w: number, rows: number, cols: number, x: number, y: number) => void;
  private view: Float32Array;
  /** The next free byte (16-byte aligned). */
  private top = 0;
  private input = { address: 0, floats: 0 };
  private output = { address: 0, floats: 0 };
  /** Bytes held by matrices (not the scratch vectors). */
  matrixBytes = 0;

  constructor() {
    compiled ??= new wasm.Module(Buffer.from(KERNELS_WASM_BASE64, 'base64'));
    const instance = new wasm.Instance(compiled, { env: { memory: this.memory } });
    this.matvecExport = instance.exports['matvec'] as (w: number, rows: number, cols: number, x: number, y: number) => void;
    this.view = new Float32Array(this.memory.buffer);
  }

  /** Reserves `floats` f32 in the memory, growing it; returns the byte address. */
  private allocate(floats: number, what: string): number {
    const address = this.top;
    const end = address + Math.ceil((floats * 4) / 16) * 16;
    if (end > this.memory.buffer.byteLength) {
      const pages = Math.ceil((end - this.memory.buffer.byteLength) / PAGE);
      if (this.memory.buffer.byteLength / PAGE + pages > MAX_PAGES) {
        throw new ReferenceEngineError('InvalidSpan', `${what} does not fit one engine's 4 GiB WebAssembly memory (${end} bytes needed): split the model over more spans`);
      }
      this.memory.grow(pages);
      this.view = new Float32Array(this.memory.buffer);
    }
    this.top = end;
    return address;
  }

  /** Copies a row-major `[rows, cols]` matrix into the memory. */
  store(values: Float32Array, rows: number, cols: number, what: string): WasmMatrix {
    const address = this.allocate(values.length, what);
    this.view.set(values, address / 4);
    this.matrixBytes += values.byteLength;
    return { address, rows, cols };
  }

  /** Copies row `index` of `m` into `out` at `outOffset`. */
  row(m: WasmMatrix, index: number, out: Float32Array, outOffset: number): void {
    const from = m.address / 4 + index * m.cols;
    out.set(this.view.subarray(from, from + m.cols), outOffset);
  }

  /** `y[yOffset + o] = Σ_i m[o, i] · x[xOffset + i]`, in kernels.wat's fixed order. */
  matVec(m: WasmMatrix, x: Float32Array, xOffset: number, y: Float32Array, yOffset: number): void {
    if (this.input.floats < m.cols) this.input = { address: this.allocate(m.cols, 'a vector'), floats: m.cols };
    if (this.output.floats < m.rows) this.output = { address: this.allocate(m.rows, 'a vector'), floats: m.rows };
    this.view.set(x.subarray(xOffset, xOffset + m.cols), this.input.address / 4);
    this.matvecExport(m.address, m.rows, m.cols, this.input.address, this.output.address);
    y.set(this.view.subarray(this.output.address / 4, this.output.address / 4 + m.rows), yOffset);
  }
}
