#!/usr/bin/env node
/**
 * `hecate-node`: dispatches to a subcommand. The only place that touches the process: argv,
 * files, stdout/stderr and the exit code (0 ok, 1 a scenario expectation failed, 2 bad usage
 * or input, 70 an internal error).
 */
import { readFileSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, oneLine, printable } from '../sim/input-error.js';
import { readBoundedFile } from './io.js';
import type { CliIO } from './command.js';
import { COMMANDS } from './commands.js';
import { absentPackage, missingPeers, missingPeersMessage } from './peers.js';
import { UsageError } from './usage-error.js';

/** Exit codes of `hecate-node`. */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 70 } as const;

/** Runs `hecate-node` with `argv` (without node and the script); returns the exit code. */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic !== undefined && COMMANDS.has(topic)) return main([topic, '--help'], io);
    io.stdout(await overview());
    return EXIT.ok;
  }
  if (name === '--version' || name === '-v') {
    io.stdout(`${version()}\n`);
    return EXIT.ok;
  }
  const entry = COMMANDS.get(name);
  if (entry === undefined) {
    io.stderr(`hecate-node: unknown command ${printable(JSON.stringify(name))} (commands: ${[...COMMANDS.keys()].join(', ')}; see --help)\n`);
    return EXIT.usage;
  }
  // The optional peers the command needs, checked before it loads (docs/install.md).
  const missing = await missingPeers(COMMANDS.get(name)?.peers ?? []);
  if (missing.length > 0) {
    io.stderr(`${missingPeersMessage(name, missing)}\n`);
    return EXIT.usage;
  }
  try {
    const { command } = await entry.load();
    return await command.run(rest, io);
  } catch (error) {
    const absent = absentPackage(error);
    if (absent !== undefined) {
      // A package only a flag loads (`--nats`, `--inspect`).
      io.stderr(`${missingPeersMessage(name, [absent])}\n`);
      return EXIT.usage;
    }
    if (error instanceof UsageError || error instanceof InputError) {
      // Flag values and file contents may hold control characters: never echo them raw.
      io.stderr(`hecate-node ${name}: ${printable(oneLine(error.message))}\n`);
      return EXIT.usage;
    }
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    io.stderr(`hecate-node ${name}: internal error: ${printable(oneLine(message))}\n`);
    if (process.env['HECATE_DEBUG'] && error instanceof Error && error.stack) io.stderr(`${error.stack}\n`);
    return EXIT.internal;
  }
}

/** The list of commands: summaries from the registry, no command module loaded (docs/install.md). */
async function overview(): Promise<string> {
  const rows: [string, string][] = [];
  for (const [name, { summary }] of COMMANDS) {
    const missing = await missingPeers(COMMANDS.get(name)?.peers ?? []);
    rows.push([name, missing.length > 0 ? `(${missingPeersMessage(name, missing)})` : summary]);
  }
  const width = Math.max(...rows.map(([n]) => n.length));
  return [
    'Usage: hecate-node <command> [flags]',
    '',
    'Commands:',
    ...rows.map(([n, s]) => `  ${n.padEnd(width)}  ${s}`),
    '',
    'Run "hecate-node <command> --help" for the flags of a command.',
    'Exit codes: 0 ok, 1 a scenario expectation failed, 2 bad usage or input or a missing package, 70 internal error.',
    '',
  ].join('\n');
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

const processIO: CliIO = {
  cwd: process.cwd(),
  readFile: (path, maxBytes) => readBoundedFile(resolve(process.cwd(), path), maxBytes),
  stderrIsTTY: process.stderr.isTTY === true,
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

// Run only when executed as the bin, not when imported (tests import `main`).
if (isEntryPoint(process.argv[1])) {
  // `hecate-node swarm-sim ... | head`: a reader that goes away is not an error worth a stack trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
  main(process.argv.slice(2), processIO).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`hecate-node: internal error: ${String(error)}\n`);
      process.exitCode = EXIT.internal;
    },
  );
}

function isEntryPoint(script: string | undefined): boolean {
  if (script === undefined) return false;
  try {
    // npm links the bin through a symlink: compare real paths.
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}
