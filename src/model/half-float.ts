/**
 * IEEE half (f16) and bfloat16 conversions to and from f32, bit-exact and platform-independent
 * (round to nearest, ties to even; NaN stays NaN), as safetensors and GGUF store them.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The f32 value of a bfloat16's 16 bits (exact: bf16 is f32's upper half). */
export function bf16ToF32(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0] as number;
}

/** The bfloat16 bits nearest `value` (ties to even). */
export function f32ToBf16(value: number): number {
  f32[0] = value;
  const x = u32[0] as number;
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x007fffff) !== 0) return ((x >>> 16) | 0x0040) & 0xffff; // quiet NaN
  const rounded = x + 0x7fff + ((x >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

/** The f32 value of an IEEE half's 16 bits (exact). */
export function f16ToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mantissa) * 2 ** (exponent - 25);
}

/** The IEEE half bits nearest `value` (ties to even; overflow to infinity). */
export function f32ToF16(value: number): number {
  f32[0] = value;
  const x = u32[0] as number;
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign; // below half the smallest subnormal
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mantissa & ((1 << shift) - 1);
    let out = mantissa >>> shift;
    if (rest > half || (rest === half && (out & 1) === 1)) out += 1;
    return sign | out;
  }
  let out = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (out & 1) === 1)) out += 1; // a carry into the exponent is the right rounding
  return sign | out;
}
