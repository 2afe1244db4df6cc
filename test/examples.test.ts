import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('examples/lifecycle.mjs', () => {
  it('runs against the built package and walks the whole lifecycle to stopped', () => {
    const out = execFileSync(process.execPath, ['examples/lifecycle.mjs'], { encoding: 'utf8' });
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(/^route\s+\{"pipeline":"base\//);
    expect(out).toMatch(/markDown\s+\{"status":"degraded","strategies":\["copy"\]/);
    expect(lines[lines.length - 1]).toMatch(/^stopped\s+"stopped"$/);
  });
});
