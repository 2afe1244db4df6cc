/**
 * What a library user's install costs: `npm pack` of this repository, then `npm install
 * <tarball> xstate` in an empty project (npm's cache first), counting every installed package and
 * the bytes of its files. Target: at most 6 packages besides xstate (docs/install.md). Run alone:
 * `node dist-bench/bench/install-size.js`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchRow } from './types.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));

/** Every installed package directory under a node_modules tree, nested ones included, by name. */
function packages(nm: string, into: string[] = []): string[] {
  let entries: string[] = [];
  try {
    entries = readdirSync(nm);
  } catch {
    return into;
  }
  for (const entry of entries.filter((e) => !e.startsWith('.'))) {
    const names = entry.startsWith('@') ? readdirSync(join(nm, entry)).map((sub) => `${entry}/${sub}`) : [entry];
    for (const name of names) {
      into.push(name);
      packages(join(nm, name, 'node_modules'), into);
    }
  }
  return into;
}

function bytes(path: string): number {
  const stat = statSync(path);
  return stat.isDirectory() ? readdirSync(path).reduce((sum, e) => sum + bytes(join(path, e)), 0) : stat.size;
}

/** The install rows of `npm run bench`: packages and megabytes of `npm install hecate-swarm xstate`. */
export function installSizeBench(log: (line: string) => void = () => {}): BenchRow[] {
  log('install size: npm pack, npm install <tarball> xstate');
  const dir = mkdtempSync(join(tmpdir(), 'hecate-install-'));
  try {
    const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir, '--loglevel=error'], { cwd: repo, encoding: 'utf8' })) as { filename: string }[];
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{ "name": "project", "private": true, "type": "module" }\n');
    execFileSync('npm', ['install', join(dir, packed[0]?.filename ?? ''), 'xstate', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project, encoding: 'utf8' });
    const names = packages(join(project, 'node_modules'));
    const besides = names.filter((n) => n !== 'xstate').length;
    const mb = bytes(join(project, 'node_modules')) / 1e6;
    return [
      { name: 'library install: packages besides xstate', size: `npm install hecate-swarm xstate (${names.sort().join(', ')})`, median: besides, unit: 'packages', target: '<= 6', pass: besides <= 6 },
      { name: 'library install: size', size: 'bytes of the installed files', median: Number(mb.toPrecision(3)), unit: 'MB', target: '(reference)', pass: true },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of installSizeBench(console.error)) console.log(JSON.stringify(row));
}
