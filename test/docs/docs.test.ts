/**
 * The documents a reader follows: the README front page and docs/. Every fenced js/ts snippet runs
 * as printed (against the built package: `hecate-swarm` resolves to this repository's `dist/`),
 * every JSON example is a topology or a scenario that loads (and a scenario passes), docs/api.md's
 * root-entry table lists exactly the root entry's exports, and nothing cites a document that is not in
 * the repository. `npm test` builds first. (The README's snippets also run in a fresh consumer
 * project, against the packed package: test/package/readme.test.ts.)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fencedBlocks } from '../markdown-blocks.js';
import { describe, expect, it } from 'vitest';
import * as root from '../../src/index.js';
import { loadScenario, runScenario, topologyFromValue } from '../../src/sim/index.js';
import { loadTopology } from '../../src/sim/topology.js';

const repo = resolve(import.meta.dirname, '../..');
const DOCS = ['README.md', ...readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (file: string) => readFileSync(join(repo, file), 'utf8').replace(/\r\n/g, '\n');

interface Block {
  readonly file: string;
  readonly line: number;
  readonly lang: string;
  readonly code: string;
}

/** Every fenced block of a Markdown file, with its language and first line. */
function blocks(file: string): Block[] {
  return fencedBlocks(read(file)).map((b) => ({ file, line: b.line, lang: b.lang, code: `${b.lines.join('\n')}\n` }));
}

const all = DOCS.flatMap(blocks);
const scripts = all.filter((b) => ['js', 'javascript', 'mjs', 'ts', 'typescript'].includes(b.lang));
const jsons = all.filter((b) => b.lang === 'json');

describe('README.md', () => {
  it('is a front page of at most 15 KB', () => {
    expect(Buffer.byteLength(read('README.md'))).toBeLessThanOrEqual(15 * 1024);
  });

  it('starts with the two commands: install and run swarm-sim, then every test', () => {
    const first = blocks('README.md').find((b) => b.lang === 'sh');
    expect(first?.code.trim().split('\n')).toEqual(['npm ci && npx hecate-node swarm-sim --topology examples/swarm.json --kill gpu --pipelines 2', 'npm test']);
    expect(read('.ci/run')).toMatch(/\nnpm ci\nnpm test\n$/);
  });

  it('links to docs/api.md for the API and error tables', () => {
    expect(read('README.md')).toContain('[docs/api.md](docs/api.md)');
    expect(read('README.md')).not.toContain('| `createSwarm(');
  });
});

describe('docs/api.md', () => {
  it('lists in its root-entry table exactly the values the root entry exports', () => {
    const text = read('docs/api.md');
    const api = text.slice(text.indexOf('\n## The root entry\n'), text.indexOf('\n## The other entries\n'));
    expect(api.length).toBeGreaterThan(100);
    const firstColumn = api.split('\n').filter((l) => l.startsWith('| `')).map((l) => l.split('|')[1] ?? '');
    const listed = new Set(firstColumn.flatMap((cell) => [...cell.matchAll(/`([A-Za-z_$][\w$]*)/g)].map((m) => m[1] as string)));
    expect([...listed].sort()).toEqual(Object.keys(root).sort());
  });
});

describe('every js/ts snippet in README.md and docs/ runs as printed', () => {
  const dir = join(repo, '.snippets');
  it('there are snippets to run', () => {
    expect(scripts.length).toBeGreaterThanOrEqual(2);
  });
  it.each(scripts.map((b) => [`${b.file}:${b.line}`, b] as const))('%s', (_where, block) => {
    mkdirSync(dir, { recursive: true });
    const ts = block.lang.startsWith('t');
    const file = join(dir, `${block.file.replace(/[/.]/g, '-')}-${block.line}.${ts ? 'mts' : 'mjs'}`);
    writeFileSync(file, block.code);
    try {
      const args = ts ? [join(repo, 'node_modules/tsx/dist/cli.mjs'), '--tsconfig', join(repo, 'tsconfig.test.json'), file] : [file];
      const run = spawnSync(process.execPath, args, { cwd: repo, encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr, `${block.file}:${block.line} wrote to stderr`).toBe('');
      expect(run.status, `${block.file}:${block.line} exited with ${String(run.status)}`).toBe(0);
    } finally {
      rmSync(file, { force: true });
    }
  });
});

describe('every JSON example in README.md and docs/ validates', () => {
  it.each(jsons.map((b) => [`${b.file}:${b.line}`, b] as const))('%s', (where, block) => {
    const value = JSON.parse(block.code) as Record<string, unknown>;
    if ('steps' in value) {
      const loaded = loadScenario(block.code, where, (path, options) => loadTopology(read(join(dirname(block.file), path)), path, options));
      if (!loaded.ok) throw loaded.error;
      expect(runScenario(loaded.value).pass).toBe(true);
    } else {
      expect(Object.keys(value), `${where}: a JSON example must be a topology { models, nodes } or a scenario { steps }`).toEqual(expect.arrayContaining(['models', 'nodes']));
      const loaded = topologyFromValue(value, where);
      if (!loaded.ok) throw loaded.error;
    }
  });
});

/** Every file of the repository a reader or the package gets (tracked, or new and not ignored). */
function repoFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: repo, encoding: 'utf8' });
  return [...new Set(out.split('\n').filter((f) => f !== '' && existsSync(join(repo, f))))];
}

describe('documents cited', () => {
  // Built from pieces so this file does not cite them itself.
  const outside = [['SPEC', ' §'], ['SPEC', '.md'], ['STYLE', '.md'], ['ARCHITECTURE', '.md'], ['shared', '/']].map((p) => p.join(''));
  const text = (f: string) => (/\.(ts|mts|mjs|js|json|md|sh|txt|html)$|^\.ci\//.test(f) ? read(f) : '');

  it('no file cites a document that is not in the repository', () => {
    const found: string[] = [];
    for (const file of repoFiles()) {
      if (file === 'package-lock.json') continue;
      const content = text(file);
      for (const needle of outside) if (content.includes(needle)) found.push(`${file}: ${needle}`);
    }
    expect(found).toEqual([]);
  });

  it('every docs/*.md a file names exists', () => {
    const missing: string[] = [];
    for (const file of repoFiles()) {
      for (const m of text(file).matchAll(/\bdocs\/([\w-]+\.md)/g)) if (!existsSync(join(repo, 'docs', m[1] as string))) missing.push(`${file}: docs/${m[1]}`);
    }
    expect(missing).toEqual([]);
  });

  it('every relative link in README.md and docs/ points at a file', () => {
    const broken: string[] = [];
    for (const file of DOCS) {
      for (const m of read(file).matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(repo, dirname(file), target))) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('plain words', () => {
  it('says "the original design", not "the seed", and explains the telomerase where it names it', () => {
    for (const file of DOCS) {
      const content = read(file);
      expect(content, file).not.toMatch(/\bthe seed\b|\bseed's\b|\bseed design\b|beyond the seed/i);
      for (const paragraph of content.split(/\n\s*\n/)) if (/telomerase/i.test(paragraph)) expect(paragraph, `${file}: a paragraph names the telomerase without saying it is the growth policy`).toMatch(/grow/i);
    }
  });
});
