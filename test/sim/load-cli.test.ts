import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { command } from '../../src/cli/load-sim.js';
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
    for (const flag of ['--seed', '--seeds', '--workload', '--requests', '--out', '--json']) expect(help).toContain(flag);
  });

  it('turns bad flags into one-line usage errors with nothing on stdout', async () => {
    expect(await usageError(['--bogus'])).toMatch(/unknown flag --bogus/);
    expect(await usageError(['--seeds', '0'])).toMatch(/--seeds: must be >= 1/);
    expect(await usageError(['--seeds', 'many'])).toMatch(/--seeds: must be an integer/);
    expect(await usageError(['--workload', 'w9'])).toMatch(/--workload: unknown workload "w9"/);
    expect(await usageError(['--out', ''])).toMatch(/--out/);
    for (const m of [await usageError(['--requests', '5'])]) expect(m).not.toContain('\n');
  });

  it('exits 2 through the dispatcher for a bad flag', async () => {
    const { main } = await import('../../src/cli/main.js');
    const io = memoryIO();
    expect(await main(['load-sim', '--seeds', '-3'], io)).toBe(2);
    expect(io.out).toEqual([]);
    expect(io.err.join('').trim().split('\n')).toHaveLength(1);
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
});
