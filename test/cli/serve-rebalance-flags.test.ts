/** `hecate-node serve --rebalance` and `--rebalance-every-ms` (docs/rebalance.md): refused alone and out of range, before anything starts; in help. */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args.js';
import type { CliIO } from '../../src/cli/command.js';
import { command } from '../../src/cli/serve.js';

function memoryIO(): CliIO & { out: string[] } {
  const out: string[] = [];
  return { cwd: process.cwd(), readFile: () => '', stdout: (t) => void out.push(t), stderr: () => undefined, out };
}

async function refusal(argv: string[]): Promise<string> {
  const error = await Promise.resolve(command.run(argv, memoryIO())).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(UsageError);
  return (error as Error).message;
}

describe('serve --rebalance', () => {
  it('refuses --rebalance-every-ms without --rebalance, and an interval out of range, naming the flag', async () => {
    expect(await refusal(['--rebalance-every-ms', '1000'])).toMatch(/--rebalance-every-ms needs --rebalance/);
    expect(await refusal(['--rebalance', '--rebalance-every-ms', '0'])).toMatch(/--rebalance-every-ms/);
  });

  it('documents both flags in its help', async () => {
    const io = memoryIO();
    expect(await command.run(['--help'], io)).toBe(0);
    expect(io.out.join('')).toMatch(/--rebalance\b[\s\S]*--rebalance-every-ms/);
  });
});
