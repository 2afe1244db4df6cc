/**
 * Data flows one way: CLI → runtime → machines → core (docs/design.md §11). This test reads the import
 * statements of every .ts file and fails on an upward or forbidden import. Directories that do
 * not exist yet are simply empty.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every module specifier a TypeScript source imports or re-exports, comments ignored. */
function importsOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const patterns = [
    /\bfrom\s*['"]([^'"]+)['"]/g, // import … from 'x', export … from 'x'
    /\bimport\s*['"]([^'"]+)['"]/g, // import 'x'
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g, // import('x')
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g, // require('x')
  ];
  const found: string[] = [];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) if (match[1] !== undefined) found.push(match[1]);
  return found;
}

/** The .ts files under a repo-relative directory, recursively; none if it does not exist. */
function tsFiles(dir: string): string[] {
  const abs = join(root, dir);
  if (!existsSync(abs)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(abs)) {
    const path = join(abs, entry);
    if (statSync(path).isDirectory()) out.push(...tsFiles(relative(root, path)));
    else if (/\.(c|m)?tsx?$/.test(entry) && !entry.endsWith('.d.ts')) out.push(relative(root, path));
  }
  return out;
}

/** The repo-relative path (with '/') a relative specifier points to, or undefined for a package. */
function target(file: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  return relative(root, resolve(root, dirname(file), spec)).split(sep).join('/');
}

const isNodeBuiltin = (spec: string) => spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0] ?? spec);
const within = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/** Every forbidden import of the tree: `file → specifier (why)`. */
function violations(files: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const [file, source] of Object.entries(files)) {
    const path = file.split(sep).join('/');
    for (const spec of importsOf(source)) {
      const to = target(path, spec);
      if (within(path, 'src/core')) {
        if (isNodeBuiltin(spec)) out.push(`${path} → ${spec} (core is pure: no node: module)`);
        else if (/^(@xstate\/|xstate$|xstate\/)/.test(spec)) out.push(`${path} → ${spec} (core is pure: no xstate)`);
        else if (to === undefined) out.push(`${path} → ${spec} (core imports no package)`);
        else if (!within(to, 'src/core')) out.push(`${path} → ${spec} (core imports nothing outside src/core)`);
      }
      if (within(path, 'machines') && to !== undefined) {
        for (const up of ['src/runtime', 'src/testing', 'src/sim', 'src/cli']) if (within(to, up)) out.push(`${path} → ${spec} (machines must not import ${up})`);
      }
      if (within(path, 'src/runtime') && to !== undefined) {
        for (const up of ['src/sessions', 'src/persistence', 'src/prefix', 'src/rebalance', 'src/testing', 'src/sim', 'src/cli']) if (within(to, up)) out.push(`${path} → ${spec} (runtime must not import ${up})`);
      }
      if ((within(path, 'src/sessions') || within(path, 'src/persistence') || within(path, 'src/prefix') || within(path, 'src/rebalance')) && to !== undefined) {
        for (const up of ['src/testing', 'src/sim', 'src/cli', 'src/orchestrator', 'src/agent', 'src/wire', 'src/net']) if (within(to, up)) out.push(`${path} → ${spec} (${path.split('/')[1]} must not import ${up})`);
      }
      // Two programs (docs/design.md §11): they share only what both speak, src/wire and src/net.
      if (within(path, 'src/agent') && to !== undefined) {
        for (const other of ['src/orchestrator', 'src/sim', 'src/cli', 'src/replication']) if (within(to, other)) out.push(`${path} → ${spec} (the agent must not import ${other})`);
      }
      if (within(path, 'src/orchestrator') && to !== undefined) {
        for (const other of ['src/agent', 'src/sim', 'src/cli']) if (within(to, other)) out.push(`${path} → ${spec} (the orchestrator must not import ${other})`);
      }
      // The conformance runner checks any stage server: it speaks only the wire, as a stranger would.
      if (within(path, 'src/conformance') && to !== undefined && !within(to, 'src/conformance') && !within(to, 'src/wire') && !within(to, 'src/net') && !within(to, 'src/core')) out.push(`${path} → ${spec} (the conformance runner imports only the wire, net and core)`);
      if (within(path, 'src/wire') && to !== undefined && !within(to, 'src/wire') && !within(to, 'src/core')) out.push(`${path} → ${spec} (the wire imports only src/core)`);
      if (within(path, 'src/net') && to !== undefined && !within(to, 'src/net') && !within(to, 'src/wire') && !within(to, 'src/core') && !within(to, 'src/runtime/types.js')) out.push(`${path} → ${spec} (net imports only the wire, core and the runtime's types)`);
      if (to !== undefined && !within(path, 'src/cli') && (within(to, 'src/agent') || within(to, 'src/orchestrator') || within(to, 'src/conformance')) && !within(path, 'src/agent') && !within(path, 'src/orchestrator') && !within(path, 'src/conformance')) out.push(`${path} → ${spec} (only the CLI starts a program)`);
      if (within(path, 'src/testing') && to !== undefined) {
        for (const up of ['src/sim', 'src/cli']) if (within(to, up)) out.push(`${path} → ${spec} (testing must not import ${up})`);
      }
    }
  }
  return out;
}

describe('layering', () => {
  it('finds every form of import statement', () => {
    const source = [
      "import { a } from './a.js';",
      'import type {\n  B,\n  C,\n} from "../b.js";',
      "export * from './c.js';",
      "export { d } from './d.js';",
      "import './e.js';",
      "const f = await import('./f.js');",
      "// import { no } from 'commented-out';",
      "/* import { no } from 'block-comment'; */",
      "/** @example import { no } from 'tsdoc'; */",
    ].join('\n');
    expect(importsOf(source).sort()).toEqual(['../b.js', './a.js', './c.js', './d.js', './e.js', './f.js']);
  });

  it('flags an upward or impure import in each layer', () => {
    expect(
      violations({
        'src/core/route.ts': "import { setup } from 'xstate';\nimport { x } from '../runtime/x.js';\nimport { y } from './y.js';",
        'src/core/io.ts': "import { readFileSync } from 'node:fs';\nimport path from 'path';\nimport { nanoid } from 'nanoid';",
        'machines/swarm.machine.ts': "import { a } from '../src/core/a.js';\nimport { b } from '../src/runtime/b.js';\nimport { c } from '../src/sim/c.js';\nimport { d } from '../src/cli/d.js';",
        'src/runtime/swarm.ts': "import { a } from '../../machines/a.js';\nimport { b } from '../sim/b.js';\nimport { c } from '../cli/c.js';\nimport { d } from '../prefix/d.js';",
        'src/prefix/prefix-router.ts': "import { a } from '../runtime/a.js';\nimport { b } from '../orchestrator/b.js';",
        'src/agent/agent.ts': "import { a } from '../wire/a.js';\nimport { b } from '../orchestrator/b.js';\nimport { c } from '../sim/c.js';",
        'src/orchestrator/generate.ts': "import { a } from '../net/a.js';\nimport { b } from '../agent/b.js';",
        'src/wire/frames.ts': "import { a } from '../core/a.js';\nimport { b } from '../net/b.js';",
        'src/sim/report.ts': "import { a } from '../agent/a.js';",
        'src/cli/main.ts': "import { a } from '../runtime/a.js';\nimport { b } from 'node:fs';",
      }),
    ).toEqual([
      "src/core/route.ts → xstate (core is pure: no xstate)",
      'src/core/route.ts → ../runtime/x.js (core imports nothing outside src/core)',
      'src/core/io.ts → node:fs (core is pure: no node: module)',
      'src/core/io.ts → path (core is pure: no node: module)',
      'src/core/io.ts → nanoid (core imports no package)',
      'machines/swarm.machine.ts → ../src/runtime/b.js (machines must not import src/runtime)',
      'machines/swarm.machine.ts → ../src/sim/c.js (machines must not import src/sim)',
      'machines/swarm.machine.ts → ../src/cli/d.js (machines must not import src/cli)',
      'src/runtime/swarm.ts → ../sim/b.js (runtime must not import src/sim)',
      'src/runtime/swarm.ts → ../cli/c.js (runtime must not import src/cli)',
      'src/runtime/swarm.ts → ../prefix/d.js (runtime must not import src/prefix)',
      'src/prefix/prefix-router.ts → ../orchestrator/b.js (prefix must not import src/orchestrator)',
      'src/prefix/prefix-router.ts → ../orchestrator/b.js (only the CLI starts a program)',
      'src/agent/agent.ts → ../orchestrator/b.js (the agent must not import src/orchestrator)',
      'src/agent/agent.ts → ../sim/c.js (the agent must not import src/sim)',
      'src/orchestrator/generate.ts → ../agent/b.js (the orchestrator must not import src/agent)',
      'src/wire/frames.ts → ../net/b.js (the wire imports only src/core)',
      'src/sim/report.ts → ../agent/a.js (only the CLI starts a program)',
    ]);
  });

  it('keeps the two programs (HTTP, fastify, prom-client) out of the library: only the CLI imports them', () => {
    const programs = ['src/orchestrator', 'src/agent', 'src/net', 'src/conformance'];
    const offenders: string[] = [];
    for (const file of [...tsFiles('src'), ...tsFiles('machines')]) {
      const path = file.split(sep).join('/');
      if (within(path, 'src/cli') || programs.some((p) => within(path, p))) continue;
      for (const spec of importsOf(readFileSync(join(root, file), 'utf8'))) {
        const to = target(path, spec);
        if ((to !== undefined && programs.some((p) => within(to, p))) || /^(fastify|prom-client|undici)(\/|$)/.test(spec)) offenders.push(`${path} → ${spec}`);
      }
    }
    for (const p of programs) expect(tsFiles(p).length).toBeGreaterThan(0);
    expect(offenders).toEqual([]);
  });

  it('has no import loop in the two programs and what they share, type-only imports included', () => {
    const graph = new Map<string, string[]>();
    for (const file of ['src/orchestrator', 'src/agent', 'src/wire', 'src/net', 'src/conformance'].flatMap(tsFiles)) {
      const path = file.split(sep).join('/');
      const deps = importsOf(readFileSync(join(root, file), 'utf8')).map((spec) => target(path, spec)?.replace(/\.js$/, '.ts')).filter((t): t is string => t !== undefined);
      graph.set(path, deps);
    }
    const loops: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      stack.push(file);
      for (const dep of graph.get(file) ?? []) {
        if (!graph.has(dep)) continue;
        if (state.get(dep) === 'open') loops.push([...stack.slice(stack.indexOf(dep)), dep].join(' → '));
        else if (!state.has(dep)) visit(dep);
      }
      stack.pop();
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(loops).toEqual([]);
  });

  it('keeps every file of the two programs and what they share at 400 lines or fewer', () => {
    const long = ['src/orchestrator', 'src/agent', 'src/wire', 'src/net', 'src/conformance'].flatMap(tsFiles).map((f) => [f, readFileSync(join(root, f), 'utf8').split('\n').length] as const).filter(([, n]) => n > 400);
    expect(long).toEqual([]);
  });

  it('keeps src/replication (NATS) above the runtime: no library layer imports it, only it imports @nats-io', () => {
    const offenders: string[] = [];
    for (const file of [...tsFiles('src'), ...tsFiles('machines')]) {
      const path = file.split(sep).join('/');
      const above = within(path, 'src/replication') || within(path, 'src/orchestrator') || within(path, 'src/cli');
      for (const spec of importsOf(readFileSync(join(root, file), 'utf8'))) {
        const to = target(path, spec);
        if (!above && to !== undefined && within(to, 'src/replication')) offenders.push(`${path} → ${spec} (below replication)`);
        if (!within(path, 'src/replication') && /^@nats-io\//.test(spec)) offenders.push(`${path} → ${spec} (only src/replication loads NATS)`);
      }
    }
    expect(tsFiles('src/replication').length).toBeGreaterThan(0);
    expect(offenders).toEqual([]);
  });

  it('holds for the tree: CLI → runtime → machines → core, core pure', () => {
    const files: Record<string, string> = {};
    for (const dir of ['src/core', 'machines', 'src/runtime', 'src/sessions', 'src/persistence', 'src/prefix', 'src/rebalance', 'src/orchestrator', 'src/agent', 'src/wire', 'src/net', 'src/conformance', 'src/sim', 'src/testing']) for (const file of tsFiles(dir)) files[file] = readFileSync(join(root, file), 'utf8');
    expect(Object.keys(files).some((f) => f.startsWith('src/core/'))).toBe(true);
    expect(violations(files)).toEqual([]);
  });
});
