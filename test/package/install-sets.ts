/**
 * docs/install.md's install sets, added one after the other to one project, and what `hecate-node`
 * must do in each: `--help`, `-h` and a bare call list every command; every command either runs a
 * trivial invocation (or its `--help`) with exit 0, or exits 2 with one line naming what is missing
 * and an install line docs/install.md gives. Used by readme.test.ts, which packs the package once.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

const LIBRARY = 'npm install hecate-swarm xstate';

/** The sets in the order a project adds them: each adds packages to the one before. */
export const INSTALL_SETS = [
  { name: 'library', add: LIBRARY },
  { name: 'zod', add: 'zod' },
  { name: 'server', add: 'fastify prom-client undici zod' },
  { name: 'nats', add: '@nats-io/jetstream@3.3 @nats-io/kv@3.3 @nats-io/transport-node@3.3' },
  { name: 'inspect', add: 'ws @statelyai/inspect' },
] as const;

/** What one invocation printed. */
export interface Ran {
  readonly argv: readonly string[];
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `npx hecate-node …` (`npx: false`: the bin npm linked, without npx's start-up) in `cwd`. */
export function hecateNode(cwd: string, env: NodeJS.ProcessEnv, argv: readonly string[], npx = false): Promise<Ran> {
  const [cmd, args] = npx ? ['npx', ['hecate-node', ...argv]] : [process.execPath, [join(cwd, 'node_modules/.bin/hecate-node'), ...argv]];
  return new Promise((done, fail) => {
    const child = spawn(cmd as string, args as string[], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ argv, code, stdout, stderr });
    });
  });
}

/** The install lines docs/install.md gives: full lines in backquotes, and the "add …" ones. */
export function documentedLines(installMd: string): { full: string[]; adds: string[] } {
  const full = [...installMd.matchAll(/`(npm install hecate-swarm xstate[^`]*)`/g)].map((m) => m[1] as string);
  const adds = [...installMd.matchAll(/\badd `([^`]+)`/g)].map((m) => m[1] as string);
  return { full, adds };
}

/**
 * Checks a missing-package line: `hecate-node <command> needs <packages>: <install line>`, where the
 * install line is one docs/install.md gives, alone or followed by one of its "add" parts.
 */
export function expectNamesInstallLine(ran: Ran, command: string, docs: { full: string[]; adds: string[] }): void {
  const where = `hecate-node ${ran.argv.join(' ')}`;
  expect(ran.code, `${where}: ${ran.stderr}`).toBe(2);
  expect(ran.stdout, where).toBe('');
  const m = new RegExp(`^hecate-node ${command} needs (\\S+(?:, \\S+)*(?: and \\S+)?): (.*)\\n$`).exec(ran.stderr);
  expect(m, `${where} printed ${JSON.stringify(ran.stderr)}`).not.toBeNull();
  const line = m?.[2] ?? '';
  const documented = docs.full.some((full) => line === full || docs.adds.some((add) => line === `${full} ${add}`));
  expect(documented, `${where}: "${line}" is not an install line of docs/install.md`).toBe(true);
  for (const name of (m?.[1] ?? '').split(/, | and /)) expect(line.split(' ').map((s) => s.replace(/(.)@.*$/, '$1')), where).toContain(name);
}

/** Whether the project `cwd` has the package `name` installed. */
export const installed = (cwd: string, name: string) => existsSync(join(cwd, 'node_modules', name, 'package.json'));

/**
 * Every invocation of `hecate-node` for the set installed in `cwd`, checked: the overview three
 * ways (`npx`), and each command's `--help` and a trivial run. Returns what ran, for the log.
 */
export async function checkCli(cwd: string, env: NodeJS.ProcessEnv, installMd: string): Promise<Ran[]> {
  const docs = documentedLines(installMd);
  const has = (name: string) => installed(cwd, name);
  const zod = has('zod');
  const server = zod && has('fastify') && has('prom-client') && has('undici');
  const nats = has('@nats-io/jetstream') && has('@nats-io/kv') && has('@nats-io/transport-node');
  const ws = has('ws') && has('@statelyai/inspect');
  const topology = 'node_modules/hecate-swarm/examples/swarm.json';
  /** argv, the command whose line it prints when its packages are missing, and whether they are here. */
  const cases: { argv: string[]; command: string; ok: boolean; npx?: boolean; check?: (r: Ran) => void }[] = [
    ...[[], ['--help'], ['-h']].map((argv) => ({ argv, command: '', ok: true, npx: true })),
    { argv: ['swarm-sim', '--help'], command: 'swarm-sim', ok: zod },
    { argv: ['swarm-sim', '--topology', topology, '--kill', 'gpu', '--seed', '1'], command: 'swarm-sim', ok: zod, check: (r) => expect(JSON.parse(r.stdout)).toHaveProperty('steps') },
    { argv: ['scenario', '--help'], command: 'scenario', ok: zod },
    { argv: ['scenario', 'growth', '--quiet'], command: 'scenario', ok: zod, check: (r) => expect(r.stdout).toMatch(/^1 scenario \(0 failed\)/m) },
    { argv: ['chart', '--help'], command: 'chart', ok: zod },
    { argv: ['chart', '--machine', 'node'], command: 'chart', ok: zod, check: (r) => expect(r.stdout).toMatch(/^stateDiagram-v2/) },
    { argv: ['load-sim', '--help'], command: 'load-sim', ok: zod },
    { argv: ['load-sim', '--workload', 'w1-rho0.5', '--seeds', '1', '--requests', '100'], command: 'load-sim', ok: zod, check: (r) => expect(r.stdout).toMatch(/^\| w1-rho0\.5 \| wrr \|/m) },
    { argv: ['serve', '--help'], command: 'serve', ok: server },
    { argv: ['agent', '--help'], command: 'agent', ok: server },
    { argv: ['inspector', '--help'], command: 'inspector', ok: zod },
    { argv: ['conformance', '--help'], command: 'conformance', ok: zod && has('fastify') },
    { argv: ['make-model', '--help'], command: 'make-model', ok: zod },
  ];
  const runs = await Promise.all(cases.map((c) => hecateNode(cwd, env, c.argv, c.npx)));
  runs.forEach((ran, i) => {
    const c = cases[i] as (typeof cases)[number];
    if (!c.ok) return expectNamesInstallLine(ran, c.command, docs);
    expect(ran.code, `hecate-node ${c.argv.join(' ')}: ${ran.stderr}`).toBe(0);
    if (c.command === '') {
      const rows = ran.stdout.split('\n').filter((l) => /^ {2}[a-z-]+ {2,}/.test(l));
      expect(rows.map((l) => l.trim().split(' ')[0])).toEqual(['swarm-sim', 'scenario', 'chart', 'load-sim', 'serve', 'agent', 'inspector', 'conformance', 'make-model']);
      // A command that cannot run shows its line in place of the summary.
      expect(rows.find((l) => l.includes(' serve '))?.includes('needs'), ran.stdout).toBe(!server);
      expect(rows.find((l) => l.includes(' chart '))?.includes('needs'), ran.stdout).toBe(!zod);
    } else if (c.argv.includes('--help')) expect(ran.stdout).toMatch(new RegExp(`^Usage: hecate-node ${c.command} `));
    c.check?.(ran);
  });
  // What only a flag or the running command loads.
  const flagged: { argv: string[]; command: string; ok: boolean; otherwise: RegExp }[] = [];
  if (zod) flagged.push({ argv: ['swarm-sim', '--topology', topology, '--inspect', 'ws://127.0.0.1:9'], command: 'swarm-sim', ok: ws, otherwise: /^hecate-node swarm-sim: .*127\.0\.0\.1:9/ });
  if (zod && !ws) flagged.push({ argv: ['inspector', '--port', '0'], command: 'inspector', ok: false, otherwise: /$^/ });
  if (server) flagged.push({ argv: ['serve', '--port', '0', '--topology', topology, '--nats', 'nats://127.0.0.1:9', '--swarm', 'lab'], command: 'serve', ok: nats, otherwise: /^hecate-node serve: flag --nats: cannot use nats:\/\/127\.0\.0\.1:9/m });
  const flaggedRuns = await Promise.all(flagged.map((f) => hecateNode(cwd, env, f.argv)));
  flaggedRuns.forEach((ran, i) => {
    const f = flagged[i] as (typeof flagged)[number];
    if (!f.ok) return expectNamesInstallLine({ ...ran, stderr: ran.stderr.replace(/^hecate-node serve: created the swarm secret.*\n/, '') }, f.command, docs);
    expect(ran.code, ran.stderr).toBe(2);
    expect(ran.stderr).toMatch(f.otherwise);
    expect(ran.stderr).not.toMatch(/ needs /);
  });
  return [...runs, ...flaggedRuns];
}
