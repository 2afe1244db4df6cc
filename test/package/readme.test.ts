/**
 * The README as a new user follows it, in a fresh project rather than in this repository: the
 * package is packed once and installed into an empty directory with the README's own install
 * lines (the name `hecate-swarm` replaced by the tarball), then
 * - the library install is counted (packages, megabytes; no engine warning on this Node);
 * - every ```js snippet runs there as printed, and prints each of its `// → x` lines;
 * - `hecate-node` in each of docs/install.md's install sets, added one after the other (library,
 *   zod, the server's, NATS, the inspector's): the overview and every command run or name their
 *   install line (install-sets.ts);
 * - the install figures the README, docs/install.md and docs/performance.md give are the ones
 *   measured here (printed, and checked to within 5%);
 * - the "Real processes" walkthrough runs command by command with real processes on loopback
 *   (a free port for 8080): it makes a model, serves it on three agents, asks a completion, kills
 *   one agent and asks again; every `# → x` line (the token ids both times) is checked against what its command printed, the
 *   pid file `kill -9` reads is the agent's own process, which dies, and the others exit cleanly.
 * Uses npm's cache (`--prefer-offline`): only a cold cache reaches the registry.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../replication/nats-server.js';
import { fencedBlocks, type FencedBlock } from '../markdown-blocks.js';
import { checkCli, INSTALL_SETS } from './install-sets.js';

const repo = resolve(import.meta.dirname, '../..');
const README = readFileSync(join(repo, 'README.md'), 'utf8').replace(/\r\n/g, '\n');
const INSTALL_MD = readFileSync(join(repo, 'docs/install.md'), 'utf8');
const PERFORMANCE_MD = readFileSync(join(repo, 'docs/performance.md'), 'utf8');
/** This Node first on the PATH, so npm, npx and the snippets run on the Node the tests run on. */
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}`, npm_config_update_notifier: 'false' };

type Block = FencedBlock;

/** Every fenced block of the README, with its language and the line it opens on. */
const blocks = (): Block[] => fencedBlocks(README);

const ALL = blocks();
const SNIPPETS = ALL.filter((b) => b.lang === 'js');
const INSTALL = /^npm install hecate-swarm xstate( [@\w./-]+)*$/;
/** The README's install lines, in order: the library's first. */
const INSTALL_LINES = ALL.filter((b) => b.lang === 'sh').flatMap((b) => b.lines.filter((l) => INSTALL.test(l)));
/** The walkthrough: the sh block of "## Real processes". */
const REAL = README.split('\n').indexOf('## Real processes') + 1;
const WALK = ALL.find((b) => b.lang === 'sh' && REAL > 0 && b.line > REAL);

let dir = '';
let tarball = '';
let consumer = '';

/** Runs one of the README's install lines in `cwd`, the package name replaced by the tarball; returns npm's output. */
function install(line: string, cwd: string): string {
  const args = line.split(' ').slice(2).map((a) => (a === 'hecate-swarm' ? tarball : a));
  const run = spawnSync('npm', ['install', ...args, '--prefer-offline', '--no-audit', '--no-fund'], { cwd, encoding: 'utf8', env });
  expect(run.status, `${line}: ${run.stderr}`).toBe(0);
  return run.stdout + run.stderr;
}

/** Every installed package (name → directory) under a node_modules tree, nested ones included. */
function packagesIn(root: string): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (nm: string) => {
    if (!existsSync(nm)) return;
    for (const entry of readdirSync(nm)) {
      if (entry.startsWith('.')) continue;
      const path = join(nm, entry);
      if (entry.startsWith('@')) for (const sub of readdirSync(path)) visit(`${entry}/${sub}`, join(path, sub));
      else visit(entry, path);
    }
  };
  const visit = (name: string, path: string) => {
    if (!statSync(path).isDirectory()) return;
    found.set(`${name}@${path}`, path);
    walk(join(path, 'node_modules'));
  };
  walk(join(root, 'node_modules'));
  return found;
}

function bytesIn(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + bytesIn(join(path, entry)), 0);
}

/**
 * Checks a figure a document states against the one measured: the text must hold `pattern`, whose
 * first group is the figure, within 5% of `measured` (a figure that drifts further fails).
 */
function expectStated(doc: string, text: string, pattern: RegExp, measured: number): void {
  const m = pattern.exec(text);
  expect(m, `${doc} should state a figure matching ${pattern}`).not.toBeNull();
  const stated = Number(m?.[1]);
  expect(Math.abs(stated - measured), `${doc} says ${stated}, measured ${measured.toFixed(2)}: update ${doc}`).toBeLessThanOrEqual(measured * 0.05);
}

/** Installs one of docs/install.md's "add …" parts in `cwd`; returns npm's output. */
function add(specs: string, cwd: string): string {
  return install(`npm install hecate-swarm xstate ${specs}`, cwd);
}

/** A regular expression for one expected output line: `…` stands for anything. */
function expected(line: string): RegExp {
  return new RegExp(`^${line.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/** Whether the process `pid` still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hecate-readme-'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir, '--loglevel=error'], { cwd: repo, encoding: 'utf8', env })) as { filename: string }[];
  tarball = join(dir, packed[0]?.filename ?? '');
  consumer = join(dir, 'project');
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'my-orchestrator', private: true, type: 'module' }, null, 2)}\n`);
}, 120_000);

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe('the README in a fresh project', () => {
  it('gives the library install line first, then the walkthrough\'s', () => {
    expect(INSTALL_LINES[0]).toBe('npm install hecate-swarm xstate');
    expect(WALK?.lines[0]).toBe('npm install hecate-swarm xstate fastify prom-client undici zod');
    expect(SNIPPETS.length).toBeGreaterThanOrEqual(3);
  });

  it('the library install line: at most 6 packages besides xstate, no engine warning', () => {
    const output = install(INSTALL_LINES[0] as string, consumer);
    expect(output).not.toMatch(/EBADENGINE/);
    const installed = packagesIn(consumer);
    const names = [...installed.keys()].map((k) => k.slice(0, k.indexOf('@', 1))).sort();
    expect(names).toEqual(['@xstate/graph', 'hecate-swarm', 'nanoid', 'xstate']);
    expect(names.filter((n) => n !== 'xstate').length).toBeLessThanOrEqual(6);
    expect(output, 'the package has no install script (npm 11 lists them)').not.toMatch(/install-scripts|hecate-swarm@[^ ]* \((preinstall|install|postinstall|prepare)/);
    const mb = bytesIn(join(consumer, 'node_modules')) / 1e6;
    console.log(`library install: ${names.length} packages (${names.join(', ')}), ${mb.toFixed(2)} MB`);
    expect(mb).toBeLessThan(6);
    expectStated('README.md', README, /That is (\d+)\s+packages/, names.length);
    expectStated('README.md', README, /packages, ([\d.]+) MB of files/, mb);
    expectStated('docs/install.md', INSTALL_MD, /`npm install hecate-swarm xstate` \| (\d+) packages/, names.length);
    expectStated('docs/install.md', INSTALL_MD, /`npm install hecate-swarm xstate` \| \d+ packages, ([\d.]+) MB of files/, mb);
    expectStated('docs/performance.md', PERFORMANCE_MD, /\| library install: size \| [^|]+\| ([\d.]+) MB \|/, mb);
  }, 120_000);

  it.each(SNIPPETS.map((b) => [`README.md:${b.line}`, b] as const))('the snippet at %s runs as printed and prints its → lines', (where, block) => {
    const file = join(consumer, `snippet-${block.line}.mjs`);
    writeFileSync(file, `${block.lines.join('\n')}\n`);
    const run = spawnSync(process.execPath, [file], { cwd: consumer, encoding: 'utf8', timeout: 60_000, env });
    expect(run.stderr, `${where} wrote to stderr`).toBe('');
    expect(run.status, `${where} exited with ${String(run.status)}`).toBe(0);
    const out = run.stdout.split('\n');
    let from = 0;
    for (const line of block.lines) {
      const m = /\/\/ → (.*)$/.exec(line);
      if (m === null) continue;
      const at = out.findIndex((printed, i) => i >= from && expected(m[1] as string).test(printed));
      expect(at, `${where}: expected a line "${m[1]}" in ${JSON.stringify(run.stdout)}`).toBeGreaterThanOrEqual(0);
      from = at + 1;
    }
  });

  it('the library install: --help, -h and a bare call list every command; each names docs/install.md\'s install line; hecate-swarm/sim names zod', async () => {
    expect(INSTALL_SETS.map((set) => set.add).slice(0, 3)).toEqual(['npm install hecate-swarm xstate', 'zod', 'fastify prom-client undici zod']);
    await checkCli(consumer, env, INSTALL_MD);
    // The README's own words for the two lines a newcomer meets first.
    const serve = spawnSync('npx', ['hecate-node', 'serve', '--port', '0'], { cwd: consumer, encoding: 'utf8', env, timeout: 60_000 });
    expect(serve.status).toBe(2);
    expect(serve.stderr.trim()).toBe(`hecate-node serve needs fastify, prom-client, undici and zod: ${WALK?.lines[0]}`);
    expect(README).toContain('`npm install hecate-swarm xstate zod`');
    const entry = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('hecate-swarm/sim')"], { cwd: consumer, encoding: 'utf8', env });
    expect(entry.status).not.toBe(0);
    expect(entry.stderr).toMatch(/ERR_MODULE_NOT_FOUND.*Cannot find package 'zod'|Cannot find package 'zod'.*ERR_MODULE_NOT_FOUND/s);
  }, 120_000);

  it('+ zod: the simulators run (a shipped scenario by name), serve and agent name their lines, the inspector names ws', async () => {
    add('zod', consumer);
    await checkCli(consumer, env, INSTALL_MD);
  }, 120_000);

  it('the walkthrough runs as printed: each → line, the pid file is the agent\'s, kill -9 kills it, the rest exit cleanly', async () => {
    const walk = WALK as Block;
    expect(install(walk.lines[0] as string, consumer)).not.toMatch(/EBADENGINE/);
    const port = String(await freePort());
    // The commands after the install line, each with the → lines that follow it.
    const steps: { command: string; expect: string[] }[] = [];
    for (const line of walk.lines.slice(1)) {
      const out = /^# → (.*)$/.exec(line);
      if (out !== null) steps[steps.length - 1]?.expect.push(out[1] as string);
      else if (line.trim() !== '' && !line.startsWith('#')) steps.push({ command: line.replaceAll('8080', port), expect: [] });
    }
    const victim = steps.map((s) => /kill -9 "\$\(cat (a\d)\.pid\)"/.exec(s.command)?.[1]).find((id) => id !== undefined);
    expect(victim).toBeDefined();
    // One bash runs the commands in order; a marker after each splits the output, and before the
    // kill -9 a probe records what the pid file points at.
    const script = ['set -u'];
    steps.forEach((step, i) => {
      const pidFile = /kill -9 "\$\(cat (\S+\.pid)\)"/.exec(step.command)?.[1];
      if (pidFile !== undefined) script.push(`echo "@@probe $(tr '\\0' ' ' < /proc/$(cat ${pidFile})/cmdline)"`, `echo "@@pid $(cat ${pidFile})"`);
      script.push(step.command, `printf '\\n@@done ${i}\\n'`); // curl prints no final newline
    });
    const bash = spawn('bash', ['-c', script.join('\n')], { cwd: consumer, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    bash.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    bash.stderr.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-20_000)));
    // A process that exits removes its pid file: one listed may be gone by the time it is read.
    const readPid = (f: string): (readonly [string, number])[] => {
      try {
        return [[f, Number(readFileSync(join(consumer, f), 'utf8'))]];
      } catch {
        return [];
      }
    };
    const pids = () => readdirSync(consumer).filter((f) => f.endsWith('.pid')).flatMap(readPid);
    try {
      const code = await new Promise<number | null>((done, fail) => {
        const timer = setTimeout(() => fail(new Error(`the walkthrough did not finish in 120 s; stdout: ${stdout}; stderr: ${stderr}`)), 120_000);
        bash.once('exit', (c) => {
          clearTimeout(timer);
          done(c);
        });
      });
      expect(code, stderr).toBe(0);
      const segments = stdout.split(/^@@done \d+$/m);
      steps.forEach((step, i) => {
        const printed = (segments[i] ?? '').split('\n');
        for (const line of step.expect) expect(printed.some((p) => expected(line).test(p)), `"${step.command}" should print "${line}"; it printed ${JSON.stringify(segments[i])}`).toBe(true);
      });
      const probe = /^@@probe (.*)$/m.exec(stdout)?.[1] ?? '';
      expect(probe).toMatch(new RegExp(`^(\\S*/)?node \\S*hecate-node agent --id ${victim} `)); // node itself, not npm's wrapper
      const killed = Number(/^@@pid (\d+)$/m.exec(stdout)?.[1]);
      expect(alive(killed)).toBe(false);
      // The others were stopped with SIGTERM: each exits and removes its pid file; the killed one's stays.
      for (let i = 0; i < 100 && pids().length > 1; i++) await new Promise((r) => setTimeout(r, 100));
      expect(pids().map(([f]) => f)).toEqual([`${victim}.pid`]);
    } finally {
      for (const [, pid] of pids()) if (alive(pid)) process.kill(pid, 'SIGKILL');
      try {
        process.kill(-(bash.pid as number), 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }
  }, 240_000);

  it('the server set (the walkthrough\'s line): serve and agent run, serve --nats names the NATS line; the figures docs/install.md gives', async () => {
    await checkCli(consumer, env, INSTALL_MD);
    // The walkthrough's own later install lines (the tokenizer library of serve --model) are not the server set.
    const extra = (WALK?.lines ?? []).slice(1).filter((l) => l.startsWith('npm install ')).flatMap((l) => (l.split('#')[0] ?? '').trim().split(' ').slice(2));
    const count = [...packagesIn(consumer).keys()].filter((k) => !extra.some((name) => k.startsWith(`${name}@`))).length;
    const mb = (bytesIn(join(consumer, 'node_modules')) - extra.reduce((sum, name) => sum + (existsSync(join(consumer, 'node_modules', name)) ? bytesIn(join(consumer, 'node_modules', name)) : 0), 0)) / 1e6;
    console.log(`server install: ${count} packages, ${mb.toFixed(1)} MB (without ${extra.join(', ') || 'nothing'})`);
    expectStated('docs/install.md', INSTALL_MD, /`npm install hecate-swarm xstate fastify prom-client undici zod` \| [^|]*: (\d+) packages/, count);
    expectStated('docs/install.md', INSTALL_MD, /`npm install hecate-swarm xstate fastify prom-client undici zod` \| [^|]*: \d+ packages, ([\d.]+) MB of files/, mb);
  }, 120_000);

  it('+ NATS: serve --nats gets as far as connecting, hecate-swarm/replication loads', async () => {
    expect(add(INSTALL_SETS[3].add, consumer)).not.toMatch(/EBADENGINE/);
    await checkCli(consumer, env, INSTALL_MD);
    const entry = spawnSync(process.execPath, ['--input-type=module', '-e', "const r = await import('hecate-swarm/replication'); console.log(typeof r.connectSwarm)"], { cwd: consumer, encoding: 'utf8', env });
    expect(entry.stderr).toBe('');
    expect(entry.stdout.trim()).toBe('function');
  }, 120_000);

  it('+ ws and @statelyai/inspect: swarm-sim --inspect gets as far as connecting', async () => {
    add(INSTALL_SETS[4].add, consumer);
    await checkCli(consumer, env, INSTALL_MD);
  }, 120_000);
});
