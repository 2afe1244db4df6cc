import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { command } from '../../src/cli/load-sim.js';
import { missNote, targetVerdict, type TargetResult } from '../../src/sim/load/targets.js';
import { UsageError } from '../../src/cli/args.js';
import type { CliIO } from '../../src/cli/command.js';

function memoryIO(cwd = process.cwd()): CliIO & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { cwd, readFile: () => '', stdout: (t) => void out.push(t), stderr: (t) => void err.push(t), out, err };
}

async function usageError(argv: string[]): Promise<string> {
  const io = memoryIO();
  try {
    await command.run(argv, io);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect(io.out).toEqual([]);
    return (error as Error).message;
  }
  throw new Error(`expected a UsageError for ${argv.join(' ')}`);
}

describe('hecate-node load-sim', () => {
  it('prints help with every flag', async () => {
    const io = memoryIO();
    expect(await command.run(['--help'], io)).toBe(0);
    const help = io.out.join('');
    for (const flag of ['--seed', '--seeds', '--workload', '--requests', '--sessions', '--w2', '--out', '--json']) expect(help).toContain(flag);
    expect(help).toContain('w6-kills');
  });

  it('turns bad flags into one-line usage errors with nothing on stdout', async () => {
    expect(await usageError(['--bogus'])).toMatch(/unknown flag --bogus/);
    expect(await usageError(['--seeds', '0'])).toMatch(/--seeds: must be >= 1/);
    expect(await usageError(['--seeds', 'many'])).toMatch(/--seeds: must be an integer/);
    expect(await usageError(['--workload', 'w9'])).toMatch(/--workload: unknown workload "w9"/);
    expect(await usageError(['--out', ''])).toMatch(/--out/);
    expect(await usageError(['--w2', 'on=0.7,burst=3'])).toMatch(/--w2: "burst=3" is not one of on=<number>/);
    expect(await usageError(['--w2', 'on=fast'])).toMatch(/--w2: "on" must be a decimal number, got "fast"/);
    expect(await usageError(['--w2', 'every=0'])).toMatch(/--w2: "every" must be a number >= 1 and <= 1000000000, got 0/);
    expect(await usageError(['--w2', 'period=1e-9'])).toMatch(/--w2: "period" must be a number >= 1/);
    expect(await usageError(['--w2', 'on=0.5,off=3'])).toMatch(/--w2: "off" must be a number > 0 and <= 2, got 3/);
    expect(await usageError(['--w2', 'on=0b1'])).toMatch(/--w2: "on" must be a decimal number, got "0b1"/);
    expect(await usageError(['--w2', 'on=0.5,on=0.7'])).toMatch(/--w2: "on" is given twice/);
    expect(await usageError(['--w2', ' , '])).toMatch(/--w2 needs at least one of on=<number>/);
    for (const m of [await usageError(['--requests', '5'])]) expect(m).not.toContain('\n');
    expect(await usageError(['--sessions', '0'])).toMatch(/--sessions: must be >= 1/);
  });

  it('exits 2 through the dispatcher for a bad flag', async () => {
    const { main } = await import('../../src/cli/main.js');
    const io = memoryIO();
    expect(await main(['load-sim', '--seeds', '-3'], io)).toBe(2);
    expect(io.out).toEqual([]);
    expect(io.err.join('').trim().split('\n')).toHaveLength(1);
  });

  it("runs the README's example as printed: a missed row says known miss and is explained in one line that names a doc, none says FAIL, and the same seed prints the same bytes", async () => {
    const line = readFileSync('README.md', 'utf8').split('\n').find((l) => l.startsWith('npx hecate-node load-sim '));
    expect(line, "the README's load-sim example").toBeDefined();
    const argv = (line ?? '').replace(/\s+#.*$/, '').split(/\s+/).slice(3);
    const run = async () => {
      const io = memoryIO();
      expect(await command.run(argv, io)).toBe(0);
      return io.out.join('');
    };
    const out = await run();
    const lines = out.split('\n');
    expect(lines.filter((l) => l.includes('FAIL'))).toEqual([]);
    const missed = lines.filter((l) => l.includes('| known miss |')).map((l) => l.split(' | ')[1]);
    for (const workload of missed) {
      const notes = lines.filter((l) => l.startsWith(`Known miss on ${workload}: `));
      expect(notes, `the one line explaining the miss on ${workload}`).toHaveLength(1);
      const doc = /docs\/[a-z-]+\.md/.exec(notes[0] ?? '')?.[0];
      expect(doc !== undefined && existsSync(doc), `${notes[0]} names a doc that exists`).toBe(true);
    }
    expect(lines.filter((l) => l.startsWith('Known miss on '))).toHaveLength(missed.length);
    expect(await run()).toBe(out);
  });

  it('tells a documented miss from one that is not, in the row and in the note', () => {
    const target = (workload: string, limit: number, pass: boolean): TargetResult => ({ target: 'p99 ≤ …', workload, ours: 1, baseline: 1, ratio: 1, limit, pass, oracle: null, latencyWeights: null });
    expect(missNote(target('w1-rho0.7', 0.7, true))).toBeUndefined();
    expect(targetVerdict(target('w1-rho0.7', 0.7, true))).toBe('pass');
    expect(missNote(target('w1-rho0.7', 0.7, false))).toMatch(/^Known miss on w1-rho0.7: .*docs\/performance\.md/);
    expect(targetVerdict(target('w1-rho0.7', 0.7, false))).toBe('known miss');
    expect(missNote(target('w2-bursty', 0.7, false))).toMatch(/^Known miss on w2-bursty: /);
    expect(missNote(target('w3-slowdown', 1.1, false))).toBe('FAIL on w3-slowdown (p99 ≤ …) is not a documented miss: compare with docs/performance.md, "Load spreading".');
    expect(targetVerdict(target('w3-slowdown', 1.1, false))).toBe('**FAIL**');
    for (const t of [target('w1-rho0.7', 0.7, false), target('w3-slowdown', 1.1, false)]) expect(missNote(t)).not.toContain('\n');
  });

  it('prints the table, and writes JSON, Markdown and one SVG per workload with --out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'load-sim-'));
    try {
      const io = memoryIO(dir);
      expect(await command.run(['--seeds', '1', '--requests', '300', '--workload', 'w1-rho0.5,w2', '--out', 'res'], io)).toBe(0);
      expect(io.out.join('')).toContain('| w2-bursty | **ours-reserve** |');
      const files = readdirSync(join(dir, 'res')).sort();
      expect(files).toEqual(['cdf-w1-rho0.5.svg', 'cdf-w2-bursty.svg', 'results.json', 'results.md']);
      const json = JSON.parse(readFileSync(join(dir, 'res', 'results.json'), 'utf8')) as { workloads: unknown[] };
      expect(json.workloads).toHaveLength(2);
      expect(readFileSync(join(dir, 'res', 'cdf-w2-bursty.svg'), 'utf8')).toMatch(/^<svg[\s\S]*<polyline[\s\S]*<\/svg>\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs W2 with the shape --w2 gives, and records it in the JSON and the Markdown', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'load-sim-'));
    try {
      const run = async (argv: string[]) => {
        const io = memoryIO(dir);
        expect(await command.run(['--seeds', '1', '--requests', '400', '--workload', 'w2', ...argv], io)).toBe(0);
        return JSON.parse(readFileSync(join(dir, 'res', 'results.json'), 'utf8')) as { bursty: Record<string, number>; workloads: { rho: number }[] };
      };
      const base = await run(['--out', 'res']);
      expect(base.bursty).toEqual({ onRho: 0.9, offRho: 0.2, periodMs: 400, burstEveryMs: 1000 });
      expect(readFileSync(join(dir, 'res', 'results.md'), 'utf8')).not.toContain('--w2');
      const light = await run(['--w2', 'on=0.3, off=0.1,every=5000', '--out', 'res']);
      expect(light.bursty).toEqual({ onRho: 0.3, offRho: 0.1, periodMs: 400, burstEveryMs: 5000 });
      expect(light.workloads[0]?.rho).toBeLessThan(base.workloads[0]?.rho ?? 0);
      expect(readFileSync(join(dir, 'res', 'results.md'), 'utf8')).toContain('--w2 on=0.3,off=0.1,period=400,every=5000');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs W6 alone with --workload w6: the sessions table and its targets, JSON and Markdown with --out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'load-sim-'));
    try {
      const io = memoryIO(dir);
      expect(await command.run(['--seeds', '1', '--sessions', '6', '--workload', 'w6', '--out', 'res'], io)).toBe(0);
      const table = io.out.join('');
      for (const row of ['| resume |', '| resume-suffix |', '| restart |', 'sessions lost where a cover exists']) expect(table).toContain(row);
      expect(table).not.toContain('ours-reserve');
      expect(readdirSync(join(dir, 'res')).sort()).toEqual(['results.json', 'results.md']);
      const json = JSON.parse(readFileSync(join(dir, 'res', 'results.json'), 'utf8')) as { workload: string; strategies: { strategy: string; median: { completed: number } }[] };
      expect(json.workload).toBe('w6-kills');
      expect(json.strategies.map((x) => x.strategy)).toEqual(['resume', 'resume-suffix', 'restart']);
      expect(readFileSync(join(dir, 'res', 'results.md'), 'utf8')).toContain('--workload w6-kills --seed 1 --seeds 1 --sessions 6');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs W6 beside the request workloads and nests it in the JSON', async () => {
    const io = memoryIO();
    expect(await command.run(['--seeds', '1', '--requests', '200', '--sessions', '4', '--workload', 'w1-rho0.5,w6', '--json'], io)).toBe(0);
    const json = JSON.parse(io.out.join('')) as { workloads: { workload: string }[]; sessions: { workload: string } };
    expect(json.workloads.map((w) => w.workload)).toEqual(['w1-rho0.5']);
    expect(json.sessions.workload).toBe('w6-kills');
  });
});
