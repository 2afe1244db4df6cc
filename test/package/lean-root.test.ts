/**
 * The root entry is the library alone: bundling everything it exports pulls in the core, the
 * statecharts, the runtime, xstate and nanoid — no schema library, no WebSocket, no inspector,
 * no simulator, no CLI. Runs on the build (`npm test` builds first).
 */
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
  // Sessions and persistence live in their own entries, so they are not in this bundle; what is
  // (xstate's 39 KB, planning, rescue, growth, failure detection, suspect routing, counted-once
  // throughput, the read view that follows the statechart, the argument checks and the prefix-cache
  // index) is about 145 KB.
  // This bound only catches a dependency or a subpath leaking back into the root: the sessions
  // entry alone would add about 18 KB, zod about 450 KB.
  it('bundles to at most 146 KB minified for a file that imports only createSwarm', async () => {
    const { bytes } = await bundle(`import { createSwarm } from ${JSON.stringify(join(repo, 'dist/src/index.js'))};\nexport const make = createSwarm;`);
    expect(bytes).toBeGreaterThan(10_000);
    expect(bytes).toBeLessThanOrEqual(146 * 1024);
  });

  it('the sim subpath is where zod comes in', async () => {
    const { inputs } = await bundle(`export * from ${JSON.stringify(join(repo, 'dist/src/sim/index.js'))};`);
    expect(inputs.some((f) => f.startsWith('node_modules/zod/'))).toBe(true);
    expect(inputs.some((f) => /node_modules\/(ws|@statelyai)\//.test(f))).toBe(false);
  });
});
