/**
 * File reading for commands, bounded: a topology or scenario file must be a regular file of at
 * most {@link INPUT_LIMIT_BYTES} of UTF-8 text. A device (`/dev/zero`), a FIFO, a socket or a
 * directory is refused before a byte is read, so nothing can hang the CLI or fill its memory.
 * Every failure becomes an {@link InputError} naming the file (exit 2).
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { InputError, type Loaded } from '../sim/input-error.js';
import type { CliIO } from './command.js';

/** Largest topology or scenario file the CLI reads: 4 MiB (docs/inputs.md). */
export const INPUT_LIMIT_BYTES = 4 * 1024 * 1024;

/** A read refused before or while reading; `code` says why. */
export class BoundedReadError extends Error {
  override readonly name = 'BoundedReadError';
  constructor(
    readonly code: 'ENOTREG' | 'EFBIG',
    message: string,
  ) {
    super(message);
  }
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * Reads at most `maxBytes` of a regular file. Opened non-blocking, so a FIFO with no writer is
 * refused at once instead of waiting; checked with fstat on the open descriptor, so the file
 * checked is the file read.
 * @throws {BoundedReadError} for a file that is not regular or is larger than `maxBytes`; the fs error (ENOENT, EACCES...) otherwise.
 */
export function readBoundedFile(path: string, maxBytes: number): Uint8Array {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new BoundedReadError('ENOTREG', `it is ${kindOf(st)}, not a regular file`);
    if (st.size > maxBytes) throw new BoundedReadError('EFBIG', `it is ${mib(st.size)}, over the ${mib(maxBytes)} limit for input files`);
    // Read one byte more than allowed: a file that grew since fstat is still caught.
    const buffer = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > maxBytes) throw new BoundedReadError('EFBIG', `it is over the ${mib(maxBytes)} limit for input files`);
      if (length === buffer.length) break;
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Reads `file` (relative to `io.cwd`) as UTF-8 text of at most {@link INPUT_LIMIT_BYTES}; never throws. */
export function readInput(io: CliIO, file: string): Loaded<string> {
  let data: string | Uint8Array;
  try {
    data = io.readFile(file, INPUT_LIMIT_BYTES);
  } catch (cause) {
    const code = (cause as { code?: unknown } | null)?.code;
    const reason =
      cause instanceof BoundedReadError
        ? cause.message
        : code === 'ENOENT'
          ? 'no such file'
          : code === 'EISDIR'
            ? 'it is a directory, not a file'
            : code === 'EACCES'
              ? 'permission denied'
              : code === 'ENOTDIR'
                ? 'a part of the path is not a directory'
                : cause instanceof Error
                  ? cause.message
                  : String(cause);
    return { ok: false, error: new InputError(file, '', `cannot read file: ${reason}`, { cause }) };
  }
  if (typeof data === 'string') return { ok: true, value: data };
  try {
    return { ok: true, value: UTF8.decode(data) };
  } catch (cause) {
    return { ok: false, error: new InputError(file, '', 'cannot read file: it is not UTF-8 text (a binary file?)', { cause }) };
  }
}
