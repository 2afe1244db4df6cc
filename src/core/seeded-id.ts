/**
 * Seeded ids as a pure step: the generator's whole state is one 32-bit number, so a statechart can
 * keep it in its context and mint the same ids from the same snapshot every time.
 */

/** nanoid's url-safe alphabet (64 symbols), so seeded ids look like nanoid's. */
const ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';

/** One mulberry32 step: the next state and its output. */
function step(state: number): [number, number] {
  const a = (state + 0x6d2b79f5) >>> 0;
  let t = a;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return [a, (t ^ (t >>> 14)) >>> 0];
}

/**
 * The id that follows `state`, and the state after it: the same characters nanoid's
 * `customRandom(urlAlphabet, size, …)` gives over a mulberry32 stream seeded with `state`
 * (for a 64-symbol alphabet it draws `size` bytes per id and reads them from the last).
 * @example const [id, next] = nextSeededId(42); // the same id on every machine
 */
export function nextSeededId(state: number, size = 10): [id: string, next: number] {
  const draw = size;
  const bytes: number[] = [];
  let s = state >>> 0;
  for (let i = 0; i < draw; i++) {
    const [next, out] = step(s);
    s = next;
    bytes.push(out & 0xff);
  }
  let id = '';
  for (let j = draw - 1; j >= 0 && id.length < size; j--) id += ALPHABET[(bytes[j] as number) & 63];
  return [id, s];
}
