/** Writing a credential file at once and only if absent: readers never see it half written. */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Writes `text` to `path` (mode 0600; its directory made 0700 when missing) unless `path` exists:
 * written beside it first, then linked into place, which fails if another process got there first.
 * @returns false when `path` already existed
 * @throws the file system's error otherwise
 */
export function createExclusive(path: string, text: string): boolean {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temp, path);
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(temp, { force: true });
  }
}
