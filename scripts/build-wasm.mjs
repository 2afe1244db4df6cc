// Compiles the reference engine's WebAssembly kernels (src/agent/engines/reference/kernels.wat)
// with wabt (a devDependency) into kernels-wasm.ts, a base64 string the engine instantiates: the
// built module ships in the package, nothing is compiled at a user's install. Run it after
// editing the .wat: `node scripts/build-wasm.mjs`; test/agent/engines/wasm-kernels.test.ts fails
// when the committed build is not the .wat's.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import wabt from 'wabt';

const dir = fileURLToPath(new URL('../src/agent/engines/reference/', import.meta.url));
const source = `${dir}kernels.wat`;
const target = `${dir}kernels-wasm.ts`;

/** The TypeScript source holding the .wat's binary (SIMD128 only: no relaxed SIMD). */
export async function builtKernels() {
  const tools = await wabt();
  const module = tools.parseWat('kernels.wat', readFileSync(source, 'utf8'), { simd: true, relaxed_simd: false });
  module.validate();
  const { buffer } = module.toBinary({ canonicalize_lebs: true });
  module.destroy();
  const base64 = Buffer.from(buffer).toString('base64');
  return `// Built by scripts/build-wasm.mjs from kernels.wat (wabt, SIMD128): do not edit.\n\n/** The kernels' WebAssembly module, base64. */\nexport const KERNELS_WASM_BASE64 =\n  '${base64}';\n`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(target, await builtKernels());
  console.log(`wrote ${target}`);
}
