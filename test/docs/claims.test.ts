/**
 * Claims in README.md and docs/ that drift when the code changes, checked against the code:
 * every `--flag` a document names is a flag of a `hecate-node` command (and a command line in a
 * code block uses only that command's flags), every endpoint a document names is a route the
 * orchestrator or the agent registers (and every orchestrator route is in docs/serve.md's
 * endpoint table), and every limit constant a document gives a value for has that value in the
 * source. (Measured figures are checked by the tests that measure them, e.g.
 * test/package/lean-root.test.ts for the bundle row of docs/performance.md.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { fencedBlocks } from '../markdown-blocks.js';

const repo = resolve(import.meta.dirname, '../..');
const DOCS = ['README.md', ...readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (file: string) => readFileSync(join(repo, file), 'utf8').replace(/\r\n/g, '\n');

/** Every .ts file under `dir` (relative to the repository). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(repo, dir))) {
    const path = join(dir, name);
    if (statSync(join(repo, path)).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/**
 * Flags the documents name that belong to other tools, each with where it comes from. A flag not
 * here and in no command's `--help` fails the test.
 */
const OTHER_TOOLS: ReadonlyMap<string, string> = new Map([
  ['cacert', 'curl (docs/security.md, "TLS")'],
  ['strict', 'publint --strict (docs/design.md)'],
  ['report', 'node dist-bench/bench/runtime.js --report (docs/machine.md)'],
  ['frobnicate', 'the unknown-flag error docs/cli.md shows'],
]);

const FLAG = /(?<![\w-])--([a-z][a-z0-9-]*)/g;
const flagsIn = (text: string) => new Set([...text.matchAll(FLAG)].map((m) => m[1] ?? ''));

describe('flags the documents name', () => {
  const help = new Map<string, Set<string>>();
  /** The numeric default each command's --help gives a flag (a flag of several commands may have several). */
  const defaults = new Map<string, Set<number>>();
  beforeAll(async () => {
    for (const [name, entry] of COMMANDS) {
      const { command } = await entry.load();
      let out = '';
      const code = await command.run(['--help'], { cwd: repo, readFile: () => '', stdout: (t) => { out += t; }, stderr: (t) => { out += t; } });
      expect(code, `hecate-node ${name} --help`).toBe(0);
      help.set(name, flagsIn(out));
      for (const m of out.matchAll(/^ {2}--([a-z][a-z0-9-]*).*\(default ([\d.]+)[;)]/gm)) defaults.set(m[1] ?? '', new Set([...(defaults.get(m[1] ?? '') ?? []), Number(m[2])]));
    }
  });

  it('are flags of a hecate-node command (its --help lists them) or of a tool the docs say', () => {
    const known = new Set([...help.values()].flatMap((s) => [...s]));
    expect(known.size).toBeGreaterThan(30);
    const unknown: string[] = [];
    for (const file of DOCS) for (const flag of flagsIn(read(file))) if (!known.has(flag) && !OTHER_TOOLS.has(flag)) unknown.push(`${file}: --${flag}`);
    expect(unknown).toEqual([]);
  });

  it("with a default stated next to them, have the default their command's --help gives", () => {
    // "`--max-nodes`, default 1,000", "`--claim-lease-ms` (default 3000)", "`--forget-after-ms`, default 30 s"
    const stated = /`--([a-z][a-z0-9-]*)[^`]*`[^`.;]{0,40}?\bdefault ([\d,.]+)(?: ?(ms|s|min|minutes)\b)?/g;
    const wrong: string[] = [];
    let found = 0;
    for (const file of DOCS) {
      for (const m of read(file).matchAll(stated)) {
        const flag = m[1] ?? '';
        const given = defaults.get(flag);
        if (given === undefined) continue;
        found++;
        const scale = flag.endsWith('-ms') ? ({ s: 1000, min: 60_000, minutes: 60_000 } as Record<string, number>)[m[3] ?? ''] ?? 1 : 1;
        const value = Number((m[2] ?? '').replace(/,/g, '').replace(/\.$/, '')) * scale;
        if (!given.has(value)) wrong.push(`${file}: --${flag} default ${m[2]}${m[3] ? ` ${m[3]}` : ''}, --help says ${[...given].join(' or ')}`);
      }
    }
    expect(found).toBeGreaterThan(5);
    expect(wrong).toEqual([]);
  });

  it("on a command line in a code block, are that command's flags", () => {
    const wrong: string[] = [];
    let lines = 0;
    for (const file of DOCS) {
      for (const block of fencedBlocks(read(file))) {
        // A command with its continuation lines (a trailing backslash) is one line.
        const joined = block.lines.join('\n').replace(/\\\n/g, ' ').split('\n');
        for (const line of joined) {
          if (line.trimStart().startsWith('#')) continue;
          for (const m of line.matchAll(/hecate-node ([a-z-]+)([^|;&]*)/g)) {
            const flags = help.get(m[1] ?? '');
            if (flags === undefined) continue;
            lines++;
            for (const flag of flagsIn(m[2] ?? '')) if (!flags.has(flag) && !OTHER_TOOLS.has(flag)) wrong.push(`${file}:${block.line}: hecate-node ${m[1]} --${flag}`);
          }
        }
      }
    }
    expect(lines).toBeGreaterThan(10);
    expect(wrong).toEqual([]);
  });
});

/** `METHOD /path` of every route registered under `dir`, path parameters written `:id`. */
function routes(dir: string): Set<string> {
  const constants = new Map<string, string>();
  for (const file of sources('src')) for (const m of read(file).matchAll(/\bconst ([A-Z_]+) = '(\/[^']*)'/g)) constants.set(m[1] ?? '', m[2] ?? '');
  const out = new Set<string>();
  for (const file of sources(dir)) {
    for (const m of read(file).matchAll(/\b(?:app|scope)\.(get|post|put|delete)(?:<[^(]*>)?\((?:'([^']+)'|([A-Z_]+))/g)) {
      const path = m[2] ?? constants.get(m[3] ?? '');
      expect(path, `${file}: route ${m[3]}`).toBeDefined();
      out.add(`${(m[1] ?? '').toUpperCase()} ${path}`);
    }
  }
  return out;
}

/** Endpoints of an upstream engine (vLLM, SGLang, llama.cpp's server) the documents name: the engine's, not ours. */
const ENGINE_ENDPOINTS = new Set(['GET /health']);

describe('endpoints the documents name', () => {
  const orchestrator = routes('src/orchestrator');
  const agent = routes('src/agent');

  it('are routes the orchestrator or the agent registers', () => {
    expect(orchestrator.size).toBeGreaterThan(5);
    expect(agent.has('POST /v1/sessions/drop')).toBe(true);
    const unknown: string[] = [];
    for (const file of DOCS) {
      for (const m of read(file).matchAll(/\b(GET|POST|PUT|DELETE) (\/[A-Za-z0-9/:{}_.-]*[A-Za-z0-9}])/g)) {
        const endpoint = `${m[1]} ${(m[2] ?? '').replace(/\{(\w+)\}/g, ':$1')}`;
        if (!orchestrator.has(endpoint) && !agent.has(endpoint) && !ENGINE_ENDPOINTS.has(endpoint)) unknown.push(`${file}: ${endpoint}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it("of the orchestrator are each in docs/serve.md's endpoint table", () => {
    const text = read('docs/serve.md');
    const table = text.slice(text.indexOf('\n## Endpoints (`serve`)\n'), text.indexOf('\n### Every error and its HTTP status\n'));
    const listed = new Set([...table.matchAll(/^\| `(GET|POST|PUT|DELETE) ([^`]+)`/gm)].map((m) => `${m[1]} ${m[2]}`));
    expect([...orchestrator].filter((r) => !listed.has(r) && !read('docs/serve.md').includes(`\`${r}`))).toEqual([]);
    expect([...listed].filter((r) => !orchestrator.has(r))).toEqual([]);
  });
});

/** A limit as a document states it: the constant, the value, and where. */
interface LimitClaim {
  readonly where: string;
  readonly name: string;
  readonly key: string | undefined;
  readonly value: number;
}

/** Multipliers of the units a document writes after a figure: sizes to bytes, durations to ms (the constants' unit). */
const UNITS: Readonly<Record<string, number>> = { '%': 0.01, MiB: 2 ** 20, KiB: 2 ** 10, ms: 1, s: 1000, min: 60_000 };

/** "1,000" → 1000, "5%" → 0.05, "4 MiB" → 4 × 2^20, "60 s" → 60000; the upper end of a range "1–100". */
function number(text: string): number | undefined {
  const m = /^(?:[\d,.]+\s*[–-]\s*)?([\d,]*\.?\d+)\s*(%|MiB|KiB|ms|s|min)?(?![\w])/.exec(text.trim());
  if (m === null) return undefined;
  return Number((m[1] ?? '').replace(/,/g, '')) * (UNITS[m[2] ?? ''] ?? 1);
}

/** The limits stated in `file`: table rows `| … | value | `CONST.key` … |`, and `CONST` (value), `CONST` = value, value (`CONST`). */
function limitClaims(file: string): LimitClaim[] {
  const out: LimitClaim[] = [];
  const constant = /`([A-Z][A-Z0-9_]{3,})(?:\.([a-zA-Z]+))?`/;
  read(file).split('\n').forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    if (line.startsWith('|')) {
      const cells = line.split('|').map((c) => c.trim());
      for (let c = 1; c + 1 < cells.length; c++) {
        const value = number(cells[c] ?? '');
        const named = new RegExp(`^${constant.source}`).exec(cells[c + 1] ?? '');
        if (value !== undefined && named !== null) out.push({ where, name: named[1] ?? '', key: named[2], value });
      }
    }
    for (const m of line.matchAll(new RegExp(`${constant.source}(?: = | \\()([\\d,.]+(?:%| MiB| ms| s| min)?)`, 'g'))) {
      const value = number(m[3] ?? '');
      if (value !== undefined) out.push({ where, name: m[1] ?? '', key: m[2], value });
    }
    for (const m of line.matchAll(new RegExp(`(?<![\\w.])([\\d,]+(?: MiB)?) \\(${constant.source}\\)`, 'g'))) {
      const value = number(m[1] ?? '');
      if (value !== undefined) out.push({ where, name: m[2] ?? '', key: m[3], value });
    }
  });
  return out;
}

describe('limits the documents state', () => {
  const claims = DOCS.flatMap(limitClaims);

  it('are stated (the check finds them)', () => {
    expect(claims.length).toBeGreaterThan(20);
  });

  it('have the value the source gives the constant', async () => {
    const defined = new Map<string, string[]>();
    for (const file of sources('src')) for (const m of read(file).matchAll(/^export const ([A-Z][A-Z0-9_]+)\b/gm)) defined.set(m[1] ?? '', [...(defined.get(m[1] ?? '') ?? []), file]);
    const wrong: string[] = [];
    for (const claim of claims) {
      const files = defined.get(claim.name);
      if (files === undefined) {
        wrong.push(`${claim.where}: \`${claim.name}\` is exported by no file under src/`);
        continue;
      }
      for (const file of files) {
        const mod = (await import(pathToFileURL(join(repo, file)).href)) as Record<string, unknown>;
        const whole = mod[claim.name];
        const actual = claim.key === undefined ? whole : (whole as Record<string, unknown> | undefined)?.[claim.key];
        if (typeof actual !== 'number') continue; // an object or a function: the document names it, no figure to check
        if (actual !== claim.value) wrong.push(`${claim.where}: ${claim.name}${claim.key ? `.${claim.key}` : ''} is ${actual} in ${relative(repo, join(repo, file))}, the document says ${claim.value}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('docs/README.md', () => {
  it('lists every document of docs/ (where to look for what)', () => {
    const index = read('docs/README.md');
    const missing = readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md' && !index.includes(`](${f})`));
    expect(missing).toEqual([]);
  });
});

describe('every document of docs/', () => {
  it('opens with what it answers: a title, then a paragraph of prose of at most 8 lines', () => {
    const bad: string[] = [];
    for (const file of DOCS.filter((f) => f.startsWith('docs/'))) {
      const [title, , ...rest] = read(file).split('\n');
      const end = rest.indexOf('');
      const first = rest.slice(0, end === -1 ? rest.length : end);
      if (!/^# \S/.test(title ?? '') || first.length === 0 || first.length > 8 || /^(#|\||```|- )/.test(first[0] ?? '')) bad.push(`${file}: ${first.length} lines, starting "${(first[0] ?? '').slice(0, 40)}"`);
    }
    expect(bad).toEqual([]);
  });
});
