/** File reading for commands: a failed read becomes an InputError naming the file. */
import { InputError, type Loaded } from '../sim/input-error.js';
import type { CliIO } from './command.js';

/** Reads `file` (relative to `io.cwd`); never throws. */
export function readInput(io: CliIO, file: string): Loaded<string> {
  try {
    return { ok: true, value: io.readFile(file) };
  } catch (cause) {
    const code = (cause as { code?: unknown } | null)?.code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory, not a file' : code === 'EACCES' ? 'permission denied' : cause instanceof Error ? cause.message : String(cause);
    return { ok: false, error: new InputError(file, '', `cannot read file: ${reason}`, { cause }) };
  }
}
