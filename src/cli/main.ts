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
import type { CliIO, Command } from './command.js';
import { absentPackage, COMMAND_PEERS, missingPeers, missingPeersMessage } from './peers.js';
import { UsageError } from './usage-error.js';

/** Every subcommand, loaded on demand. Adding a command is one line here plus its own file. */
const registry: ReadonlyMap<string, () => Promise<{ command: Command }>> = new Map([
  ['swarm-sim', () => import('./swarm-sim.js')],
  ['scenario', () => import('./scenario.js')],
  ['chart', () => import('./chart.js')],
  ['load-sim', () => import('./load-sim.js')],
  ['serve', () => import('./serve.js')],
  ['agent', () => import('./agent.js')],
  ['inspector', () => import('./inspector.js')],
  ['conformance', () => import('./conformance.js')],
]);

/** Exit codes of `hecate-node`. */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 70 } as const;

/** Runs `hecate-node` with `argv` (without node and the script); returns the exit code. */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic !== undefined && registry.has(topic)) return main([topic, '--help'], io);
    io.stdout(await overview());
    return EXIT.ok;
  }
  if (name === '--version' || name === '-v') {
    io.stdout(`${version()}\n`);
    return EXIT.ok;
  }
  const load = registry.get(name);
  if (load === undefined) {
    io.stderr(`hecate-node: unknown command ${printable(JSON.stringify(name))} (commands: ${[...registry.keys()].join(', ')}; see --help)\n`);
    return EXIT.usage;
  }
  // The optional peers the command needs, checked before it loads (docs/install.md).
  const missing = await missingPeers(COMMAND_PEERS.get(name) ?? []);
  if (missing.length > 0) {
    io.stderr(`${missingPeersMessage(name, missing)}\n`);
    return EXIT.usage;
  }
  try {
    const { command } = await load();
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

async function overview(): Promise<string> {
  const rows: [string, string][] = [];
  for (const [name, load] of registry) {
    const missing = await missingPeers(COMMAND_PEERS.get(name) ?? []);
    rows.push([name, missing.length > 0 ? `(${missingPeersMessage(name, missing)})` : (await load()).command.summary]);
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
