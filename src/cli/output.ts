/**
 * Output paths checked before a run, not after it: `--out DIR` and `--html FILE` must be
 * writable before the simulation starts, so a bad path fails at once with exit 2 instead of after
 * minutes of work (or never: Node's recursive mkdir loops forever under `/proc/self`).
 */
import { accessSync, constants, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from './args.js';

function reasonOf(cause: unknown): string {
  const code = (cause as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such directory';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'read-only file system';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return typeof code === 'string' ? code : cause instanceof Error ? cause.message : String(cause);
  }
}

/** The nearest existing ancestor of `path` (itself if it exists) and the missing directories below it, top first. */
function existingAncestor(path: string, flag: string): { existing: string; missing: string[] } {
  const missing: string[] = [];
  let probe = path;
  for (let depth = 0; depth < 256; depth++) {
    try {
      statSync(probe);
      return { existing: probe, missing: missing.reverse() };
    } catch (cause) {
      if ((cause as { code?: unknown }).code !== 'ENOENT') throw new UsageError(`flag ${flag}: cannot use "${probe}": ${reasonOf(cause)}`);
      missing.push(probe);
      const parent = dirname(probe);
      if (parent === probe) break;
      probe = parent;
    }
  }
  throw new UsageError(`flag ${flag}: cannot use "${path}": no existing directory above it`);
}

/** Writes and removes a probe file in `dir`: the only sure test that files can be created there. */
function probeWrite(dir: string, flag: string): void {
  const probe = join(dir, `.hecate-node-write-test-${process.pid}`);
  try {
    writeFileSync(probe, '');
  } catch (cause) {
    throw new UsageError(`flag ${flag}: cannot write into "${dir}": ${reasonOf(cause)}`);
  }
  rmSync(probe, { force: true });
}

/**
 * Makes sure `dir` (relative to `cwd`) is a directory files can be written into, creating the
 * missing directories one level at a time.
 * @returns the absolute directory.
 * @throws {UsageError} naming the flag and what is wrong.
 */
export function prepareOutputDir(cwd: string, dir: string, flag: string): string {
  const path = resolve(cwd, dir);
  const { existing, missing } = existingAncestor(path, flag);
  if (!statSync(existing).isDirectory()) throw new UsageError(`flag ${flag}: "${existing}" is not a directory`);
  for (const d of missing) {
    try {
      mkdirSync(d);
    } catch (cause) {
      throw new UsageError(`flag ${flag}: cannot create "${d}": ${reasonOf(cause)}`);
    }
  }
  probeWrite(path, flag);
  return path;
}

/**
 * Makes sure `file` (relative to `cwd`) can be written: an existing regular file that is
 * writable, or a new file in an existing writable directory.
 * @returns the absolute path.
 * @throws {UsageError} naming the flag and what is wrong.
 */
export function checkOutputFile(cwd: string, file: string, flag: string): string {
  const path = resolve(cwd, file);
  let exists = true;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new UsageError(`flag ${flag}: "${file}" exists and is not a regular file`);
  } catch (cause) {
    if (cause instanceof UsageError) throw cause;
    if ((cause as { code?: unknown }).code !== 'ENOENT') throw new UsageError(`flag ${flag}: cannot write "${file}": ${reasonOf(cause)}`);
    exists = false;
  }
  if (exists) {
    try {
      accessSync(path, constants.W_OK);
    } catch (cause) {
      throw new UsageError(`flag ${flag}: cannot write "${file}": ${reasonOf(cause)}`);
    }
    return path;
  }
  const parent = dirname(path);
  let isDir = false;
  try {
    isDir = statSync(parent).isDirectory();
  } catch (cause) {
    throw new UsageError(`flag ${flag}: cannot write "${file}": ${reasonOf(cause)}`);
  }
  if (!isDir) throw new UsageError(`flag ${flag}: cannot write "${file}": "${parent}" is not a directory`);
  probeWrite(parent, flag);
  return path;
}
