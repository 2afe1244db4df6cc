import { nanoid } from 'nanoid';
import { nextSeededId } from '../core/seeded-id.js';
import type { IdSource } from './types.js';

/** nanoid ids (21 chars): the default id source. */
export const randomIds: IdSource = () => nanoid();

/**
 * A deterministic nanoid-shaped id source: the same seed gives the same ids, so a `--seed` run
 * prints the same bytes. The Swarm statechart mints the same ids from the same seed in its own
 * context (`idSeed` in its input).
 * @example const ids = seededIds(42); ids(); // always the same first id
 */
export function seededIds(seed: number, size = 10): IdSource {
  let state = seed >>> 0;
  return () => {
    const [id, next] = nextSeededId(state, size);
    state = next;
    return id;
  };
}
