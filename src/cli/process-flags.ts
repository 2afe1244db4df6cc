/** Flags of the long-running commands (`serve`, `agent`): decimal numbers, the pid file, and waiting for a signal. */
import { rmSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.js';
import type { CliIO } from './command.js';

/** Runs `start`; a port already taken or an address that cannot be bound becomes a UsageError naming the flag. */
export async function listening<T>(start: () => Promise<T>, port: number, host: string): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'EADDRINUSE') throw new UsageError(`flag --port: ${host}:${port} is already in use`, { cause: error });
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EACCES') throw new UsageError(`flag --host/--port: cannot listen on ${host}:${port} (${String(code)})`, { cause: error });
    throw error;
  }
}

const decimalText = z.string().regex(/^-?(\d+\.?\d*|\.\d+)$/, 'must be a number').transform(Number);

/**
 * A decimal flag within `(min, max]` (or `[min, max]` with `inclusive`), or `undefined` if absent.
 * @throws {UsageError} naming the flag.
 */
export function numberFlag(args: ParsedArgs, name: string, min: number, max: number, inclusive = false): number | undefined {
  const raw = stringFlag(args, name);
  if (raw === undefined) return undefined;
  const parsed = decimalText.safeParse(raw);
  const v = parsed.success ? parsed.data : Number.NaN;
  if (!parsed.success || !(inclusive ? v >= min : v > min) || !(v <= max)) {
    throw new UsageError(`flag --${name}: must be a number ${inclusive ? '>=' : '>'} ${min} and <= ${max}, got "${raw}"`);
  }
  return v;
}

/** Resolves with the signal that ends a long-running command: `io.until`'s if given, else the first of SIGTERM or SIGINT the process receives. */
export function untilSignal(io: Pick<CliIO, 'until'>): Promise<NodeJS.Signals> {
  if (io.until !== undefined) return io.until();
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', on);
      process.off('SIGINT', on);
      resolve(signal);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

/** The `--pid-file` flag of `serve` and `agent`. */
export const PID_FILE_FLAG: FlagSpec = {
  type: 'string',
  value: 'path',
  description: 'Write this process\'s id to the file (e.g. for kill -9 "$(cat a1.pid)"); removed on a clean exit. npx runs the command in a child of its own, so $! is not this process.',
};

/**
 * Runs `run` with the process id in the `--pid-file` path, if given: written before, removed after
 * (whatever the outcome; a process killed with SIGKILL leaves it behind).
 * @throws {UsageError} naming the flag when the file cannot be written; nothing runs then.
 */
export async function withPidFile<T>(args: ParsedArgs, run: () => Promise<T>): Promise<T> {
  const path = stringFlag(args, 'pid-file');
  if (path === undefined) return run();
  try {
    writeFileSync(path, `${process.pid}\n`);
  } catch (error) {
    throw new UsageError(`flag --pid-file: cannot write ${path} (${String((error as { code?: unknown }).code ?? error)})`, { cause: error });
  }
  try {
    return await run();
  } finally {
    rmSync(path, { force: true });
  }
}
