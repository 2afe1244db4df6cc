import { customRandom, nanoid, urlAlphabet } from 'nanoid';
import { describeValue } from '../core/describe.js';
import { SwarmError } from '../core/errors.js';
import { mulberry32 } from '../core/random.js';
import type { IdSource } from './types.js';

/** nanoid ids (21 chars): the default id source. */
export const randomIds: IdSource = () => nanoid();

/**
 * A deterministic nanoid-shaped id source: the same seed gives the same ids, so a `--seed` run
 * prints the same bytes.
 * @param size id length, 1 to 64
 * @throws {SwarmError} `InvalidInput` for a seed that is not a finite number or a bad size.
 * @example const ids = seededIds(42); ids(); // always the same first id
 */
export function seededIds(seed: number, size = 10): IdSource {
  if (!Number.isInteger(size) || size < 1 || size > 64) throw new SwarmError('InvalidInput', `seededIds: the id size must be an integer from 1 to 64, got ${describeValue(size)}`);
  const next = mulberry32(seed);
  return customRandom(urlAlphabet, size, (bytes) => {
    const out = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i++) out[i] = next() & 0xff;
    return out;
  });
}
