/**
 * The root entry is the library alone: bundling everything it exports pulls in the core, the
 * statecharts, the runtime, xstate and nanoid — no schema library, no WebSocket, no inspector,
 * no simulator, no CLI. Runs on the build (`npm test` builds first).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../..');

/** The files a bundle of `source` is made of, repo-relative, and its minified size. */
async function bundle(source: string): Promise<{ inputs: string[]; bytes: number }> {
  const out = await build({
    stdin: { contents: source, resolveDir: repo, loader: 'js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    metafile: true,
    absWorkingDir: repo,
    tsconfigRaw: '{}',
    logLevel: 'silent',
  });
  return { inputs: Object.keys(out.metafile.inputs), bytes: out.outputFiles.reduce((n, f) => n + f.contents.byteLength, 0) };
}

describe('the root entry', () => {
  it('loads core, machines and runtime only, with xstate and nanoid', async () => {
    const { inputs } = await bundle(`export * from ${JSON.stringify(join(repo, 'dist/src/index.js'))};`);
    const packages = new Set(inputs.filter((f) => f.startsWith('node_modules/')).map((f) => f.split('/').slice(1, f.split('/')[1]?.startsWith('@') ? 3 : 2).join('/')));
    expect([...packages].sort()).toEqual(['nanoid', 'xstate']);
    const own = inputs.filter((f) => f.startsWith('dist/')).map((f) => f.split('/').slice(0, f.startsWith('dist/src/') ? 3 : 2).join('/'));
    expect([...new Set(own)].sort()).toEqual(['dist/machines', 'dist/src/core', 'dist/src/index.js', 'dist/src/runtime']);
  });

  // The size target (<= 100 KB) is a bench row (bench/package.ts, `npm run bench`; docs/performance.md).
  // Sessions, persistence and the prefix-cache index live in their own entries, so they are not in
  // this bundle; what is (xstate's 39 KB, planning, rescue, growth, failure detection, suspect
  // routing, counted-once throughput, the read view that follows the statechart and the argument
  // checks) was about 130 KB; admission (slots, the ledger, the priority queue: docs/admission.md)
  // adds about 15 KB, the prefix-cache hook and the prompt's check about 1 KB: 149.4 KB measured.
  // The ceiling was 150 KB. The statechart's rebalancing states (a node loading a span, a
  // copy forming, a stage draining: machines/swarm-moves.ts, about 2.7 KB, and their transitions in
  // the machine) and the plug-in's seam took it to about 155 KB, a busy node's release (busyNode, neutral) to 155.9 KB; the ceiling for them is 156 KB
  // (docs/rebalance.md). The decision and the runner live on hecate-swarm/rebalance. This bound
  // also catches a dependency or a subpath leaking back into the root: the prefix entry would add
  // about 12 KB, the sessions entry about 18 KB, the rebalance entry about 10 KB, zod 450 KB.
  it('bundles to at most 156 KB minified for a file that imports only createSwarm', async () => {
    const { bytes } = await bundle(`import { createSwarm } from ${JSON.stringify(join(repo, 'dist/src/index.js'))};\nexport const make = createSwarm;`);
    expect(bytes).toBeGreaterThan(10_000);
    expect(bytes).toBeLessThanOrEqual(156 * 1024);
    // The figure docs/performance.md's table gives, checked so it cannot drift (within 1 KB).
    console.log(`createSwarm-only bundle: ${(bytes / 1024).toFixed(1)} KB`);
    const stated = Number(/\| bundle importing only `createSwarm` \| [^|]+\| ([\d.]+) KB \|/.exec(readFileSync(join(repo, 'docs/performance.md'), 'utf8'))?.[1]);
    expect(Math.abs(stated - bytes / 1024), `docs/performance.md says ${stated} KB, measured ${(bytes / 1024).toFixed(1)} KB`).toBeLessThanOrEqual(1);
  });

  it('the prefix subpath brings the index, and only its own files besides the root', async () => {
    const { inputs } = await bundle(`export * from ${JSON.stringify(join(repo, 'dist/src/prefix/index.js'))};`);
    expect(inputs.some((f) => f.startsWith('dist/src/prefix/'))).toBe(true);
    const own = new Set(inputs.filter((f) => f.startsWith('dist/')).map((f) => f.split('/').slice(0, f.startsWith('dist/src/') ? 3 : 2).join('/')));
    expect([...own].filter((d) => !['dist/src/core', 'dist/src/runtime', 'dist/src/prefix', 'dist/machines'].includes(d))).toEqual([]);
  });

  it('the rebalance subpath brings the decision and the runner, and only its own files besides the root', async () => {
    const { inputs } = await bundle(`export * from ${JSON.stringify(join(repo, 'dist/src/rebalance/index.js'))};`);
    expect(inputs.some((f) => f.startsWith('dist/src/rebalance/'))).toBe(true);
    const own = new Set(inputs.filter((f) => f.startsWith('dist/')).map((f) => f.split('/').slice(0, f.startsWith('dist/src/') ? 3 : 2).join('/')));
    expect([...own].filter((d) => !['dist/src/core', 'dist/src/runtime', 'dist/src/rebalance', 'dist/machines'].includes(d))).toEqual([]);
  });

  it('the sim subpath is where zod comes in', async () => {
    const { inputs } = await bundle(`export * from ${JSON.stringify(join(repo, 'dist/src/sim/index.js'))};`);
    expect(inputs.some((f) => f.startsWith('node_modules/zod/'))).toBe(true);
    expect(inputs.some((f) => /node_modules\/(ws|@statelyai)\//.test(f))).toBe(false);
  });
});
