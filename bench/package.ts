/**
 * What the root entry costs a user: the minified size of a browser bundle of a file that imports
 * only `createSwarm` (esbuild, tree-shaken; target <= 156 KB with the rebalancing states, docs/performance.md), the same with
 * `prefixCache` of `hecate-swarm/prefix` beside it (reported), and the time to import the root
 * in a fresh Node process against importing `xstate` alone (median of fresh processes, taking
 * turns, so a burst of load hits both alike). Run alone: `node dist-bench/bench/package.js`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import type { BenchRow } from './types.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const root = join(repo, 'dist/src/index.js');

/** Bytes of the minified, tree-shaken ESM bundle of `source`. */
async function bundleBytes(source: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'hecate-bundle-'));
  try {
    const entry = join(dir, 'entry.mjs');
    writeFileSync(entry, source);
    const out = await build({ entryPoints: [entry], bundle: true, minify: true, format: 'esm', platform: 'browser', write: false, absWorkingDir: repo, tsconfigRaw: '{}', nodePaths: [join(repo, 'node_modules')], logLevel: 'silent' });
    return out.outputFiles.reduce((sum, f) => sum + f.contents.byteLength, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Milliseconds a fresh Node process takes to import `specifier` (measured inside the process). */
function importMs(specifier: string): number {
  const code = `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: repo, encoding: 'utf8' }).trim());
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const round = (x: number) => Number(x.toPrecision(4));

/** The package rows of `npm run bench`. */
export async function packageBench(log: (line: string) => void = () => {}): Promise<BenchRow[]> {
  log('package: bundle size and import time');
  const createSwarmOnly = await bundleBytes(`import { createSwarm } from ${JSON.stringify(root)};\nexport const make = createSwarm;\n`);
  const withPrefix = await bundleBytes(`import { createSwarm } from ${JSON.stringify(root)};\nimport { prefixCache } from ${JSON.stringify(join(repo, 'dist/src/prefix/index.js'))};\nexport const make = [createSwarm, prefixCache];\n`);
  const xstateOnly = await bundleBytes(`import { createActor, setup } from 'xstate';\nexport const make = [createActor, setup];\n`);
  const runs = process.env['BENCH_QUICK'] === '1' ? 5 : 15;
  const rootMs: number[] = [];
  const xstateMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    rootMs.push(importMs(pathToFileURL(root).href));
    xstateMs.push(importMs('xstate'));
  }
  const kb = createSwarmOnly / 1024;
  const r = median(rootMs);
  const x = median(xstateMs);
  return [
    { name: 'bundle importing only createSwarm', size: 'esbuild, minified, browser', median: round(kb), unit: 'KB', baselineName: 'xstate setup + createActor alone', baseline: round(xstateOnly / 1024), ratio: round(createSwarmOnly / xstateOnly), target: '<= 156 KB', pass: kb <= 156 },
    { name: 'bundle importing createSwarm and prefixCache', size: 'esbuild, minified, browser', median: round(withPrefix / 1024), unit: 'KB', baselineName: 'createSwarm alone', baseline: round(kb), ratio: round(withPrefix / createSwarmOnly), target: '(reported)', pass: true },
    { name: 'import the root entry', size: `fresh process, median of ${runs}`, median: round(r), unit: 'ms', baselineName: 'import xstate alone', baseline: round(x), ratio: round(r / x), target: '(reference)', pass: true },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await packageBench(console.error)) console.log(JSON.stringify(row));
}
