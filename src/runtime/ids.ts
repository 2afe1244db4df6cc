import { customRandom, nanoid, urlAlphabet } from 'nanoid';
import { mulberry32 } from '../core/random.js';
import type { IdSource } from './types.js';

/** nanoid ids (21 chars): the default id source. */
export const randomIds: IdSource = () => nanoid();

/**
 * A deterministic nanoid-shaped id source: the same seed gives the same ids, so a `--seed` run
 * prints the same bytes.
 * @example const ids = seededIds(42); ids(); // always the same first id
 */
export function seededIds(seed: number, size = 10): IdSource {
  const next = mulberry32(seed);
  return customRandom(urlAlphabet, size, (bytes) => {
    const out = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i++) out[i] = next() & 0xff;
    return out;
  });
}
