import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// `npm test` builds first (pretest); in a manual run, `npm run build` before vitest.
const BIN = 'dist/src/cli/main.js';
const MACHINES = ['swarm', 'node'] as const;
const DOCS = ['docs/statechart.md'] as const;

function chart(machine: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, 'chart', '--format', 'mermaid', '--machine', machine], { encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`hecate-node chart --machine ${machine} failed: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

/** The Mermaid between `<!-- chart:NAME:start -->` and `<!-- chart:NAME:end -->`, without its fence. */
function embedded(file: string, machine: string): string {
  expect(existsSync(file), `${file} is missing`).toBe(true);
  const text = readFileSync(file, 'utf8').replace(/\r\n/g, '\n');
  const start = `<!-- chart:${machine}:start -->`;
  const end = `<!-- chart:${machine}:end -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  const paste = `paste the output of \`hecate-node chart --machine ${machine}\` in a \`\`\`mermaid fence between ${start} and ${end}`;
  expect(from, `${file} has no ${start}; ${paste}`).toBeGreaterThanOrEqual(0);
  expect(to, `${file} has no ${end} after ${start}; ${paste}`).toBeGreaterThan(from);
  const block = text.slice(from + start.length, to).trim();
  const fenced = /^```mermaid\n([\s\S]*?)```$/.exec(block);
  expect(fenced, `${file}: the ${machine} chart block must be one \`\`\`mermaid fence; ${paste}`).not.toBeNull();
  return fenced?.[1] ?? '';
}

describe('the statecharts embedded in the docs', () => {
  for (const file of DOCS) {
    for (const machine of MACHINES) {
      it(`${file} shows the ${machine} statechart exactly as hecate-node chart prints it`, async () => {
        const printed = await chart(machine);
        expect(printed.startsWith('stateDiagram-v2')).toBe(true);
        expect(embedded(file, machine), `${file}: the ${machine} chart differs from the machine; regenerate it with hecate-node chart --machine ${machine}`).toBe(printed);
      });
    }
  }
});
