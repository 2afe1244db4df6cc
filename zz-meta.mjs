import { build } from 'esbuild';
const repo = '/work/wt/rebalance';
for (const src of [`import { createSwarm } from '${repo}/dist/src/index.js'; export const make = createSwarm;`, `export * from '${repo}/dist/src/rebalance/index.js';`]) {
const r = await build({ stdin: { contents: src, resolveDir: repo, loader: 'js' }, bundle: true, minify: true, format: 'esm', platform: 'browser', write: false, metafile: true, absWorkingDir: repo, tsconfigRaw: '{}', logLevel: 'silent' });
console.log(r.outputFiles[0].contents.length, (r.outputFiles[0].contents.length/1024).toFixed(1));
}
