/**
 * The command registry against the code: the packages each command's module imports (followed
 * through the sources, type-only imports left out) are exactly the peers its entry names, and those
 * it imports only through a dynamic `import()` are its flag peers. So a command whose peers are not
 * declared (as `inspector`'s once were, which crashed `--help` on the library install) fails here.
 * The real install sets are exercised from a packed tarball in test/package/readme.test.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { main } from '../../src/cli/main.js';
import { packageName } from '../../src/cli/peers.js';

const repo = resolve(import.meta.dirname, '../..');
/** commands.ts: it imports every command module, lazily. */
const REGISTRY = join(repo, 'src/cli/commands.ts');
/** What the library install brings: the package's own dependencies and xstate. */
const LIBRARY = new Set(['xstate', '@xstate/graph', 'nanoid']);

/** The value imports of a source file: static ones and dynamic `import('…')` ones, `import type` left out. */
function importsOf(file: string): { static: string[]; dynamic: string[] } {
  const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const statics: string[] = [];
  for (const m of code.matchAll(/^\s*(import|export)\s+(type\s+)?([^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm)) if (m[2] === undefined) statics.push(m[4] as string);
  const dynamic = [...code.matchAll(/(?<!typeof\s)\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] as string);
  return { static: statics, dynamic };
}

/** The source a relative specifier names (`./a.js` → `…/a.ts`), or undefined for a package. */
function sourceOf(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const path = resolve(dirname(from), spec).replace(/\.js$/, '.ts');
  return existsSync(path) ? path : undefined;
}

/** The packages (not node:, not the library's) that loading `entry` imports, and those behind a dynamic import. */
function packagesOf(entry: string): { eager: Set<string>; lazy: Set<string> } {
  const eager = new Set<string>();
  const lazy = new Set<string>();
  const seen = new Set<string>();
  const walk = (file: string, into: Set<string>, dynamicInto: Set<string>) => {
    if (seen.has(`${file}|${into === eager ? 'e' : 'l'}`)) return;
    seen.add(`${file}|${into === eager ? 'e' : 'l'}`);
    const { static: statics, dynamic } = importsOf(file);
    for (const [specs, set] of [[statics, into], [dynamic, dynamicInto]] as const) {
      for (const spec of specs) {
        const source = sourceOf(file, spec);
        // The registry's loaders are the dispatcher's imports, not the command's.
        if (source === REGISTRY) continue;
        if (source !== undefined) walk(source, set, lazy);
        else if (!spec.startsWith('node:') && !spec.startsWith('.')) {
          const name = packageName(spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/'));
          if (!LIBRARY.has(name)) set.add(name);
        }
      }
    }
  };
  walk(entry, eager, lazy);
  for (const name of eager) lazy.delete(name);
  return { eager, lazy };
}

describe('COMMANDS', () => {
  it.each([...COMMANDS.keys()])('%s: its peers are the packages its module imports, its flag peers those only a dynamic import loads', (name) => {
    const entry = COMMANDS.get(name);
    const { eager, lazy } = packagesOf(join(repo, 'src/cli', `${name}.ts`));
    expect([...eager].sort()).toEqual([...(entry?.peers ?? [])].map(packageName).sort());
    expect([...lazy].sort()).toEqual((entry?.flagPeers ?? []).flat().map(packageName).sort());
  });

  it('main.ts loads no command module and no package: the overview runs on the library install', () => {
    const { eager } = packagesOf(join(repo, 'src/cli/main.ts'));
    expect([...eager]).toEqual([]);
  });

  it('--help lists every command with its summary, in the registry\'s order', async () => {
    let out = '';
    const code = await main(['--help'], { cwd: repo, readFile: () => '', stdout: (t) => (out += t), stderr: () => {} });
    expect(code).toBe(0);
    const rows = out.split('\n').filter((l) => /^ {2}\S/.test(l)).map((l) => l.trim().split(/\s{2,}/));
    expect(rows).toEqual([...COMMANDS].map(([n, e]) => [n, e.summary]));
  });
});
