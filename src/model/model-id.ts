/**
 * The id a model directory is served under, by the orchestrator (`serve --model DIR`) and its
 * agents (`agent --model DIR`) alike: the directory's own name, so both sides agree without a flag.
 */
import { basename, resolve } from 'node:path';

/** The model id of directory `dir`: its last path segment. */
export function modelIdOf(dir: string): string {
  return basename(resolve(dir));
}
