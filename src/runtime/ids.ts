import { nanoid } from 'nanoid';
import { describeValue } from '../core/describe.js';
import { SwarmError } from '../core/errors.js';
import { nextSeededId } from '../core/seeded-id.js';
import type { IdSource } from './types.js';

/** nanoid ids (21 chars): the default id source. */
export const randomIds: IdSource = () => nanoid();

/**
 * A deterministic nanoid-shaped id source: the same seed gives the same ids, so a `--seed` run
 * prints the same bytes. The Swarm statechart mints the same ids from the same seed in its own
 * context (`idSeed` in its input).
 * @param size id length, 1 to 64
 * @throws {SwarmError} `InvalidInput` for a seed that is not a finite number or a bad size.
 * @example const ids = seededIds(42); ids(); // always the same first id
 */
export function seededIds(seed: number, size = 10): IdSource {
  if (typeof seed !== 'number' || !Number.isFinite(seed)) throw new SwarmError('InvalidInput', `seededIds: a seed must be a finite number, got ${describeValue(seed)}`);
  if (!Number.isInteger(size) || size < 1 || size > 64) throw new SwarmError('InvalidInput', `seededIds: the id size must be an integer from 1 to 64, got ${describeValue(size)}`);
  let state = seed >>> 0;
  return () => {
    const [id, next] = nextSeededId(state, size);
    state = next;
    return id;
  };
}
