/**
 * The CLI bounds what it reads and runs (docs/inputs.md): no file, flag or output path can hang
 * it, fill its memory or put raw bytes on the terminal. Each case exits 2 with one line on stderr
 * and nothing on stdout.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { INPUT_LIMIT_BYTES } from '../../src/cli/io.js';
import { parseInspectUrl } from '../../src/cli/inspect.js';
import { UsageError } from '../../src/cli/args.js';
import { InputError, LOAD_SIM_LIMITS, runSessionSim, TOPOLOGY_LIMITS } from '../../src/sim/index.js';
import { cli, type Run } from './run-cli.js';

const tmp = mkdtempSync(join(tmpdir(), 'hecate-bounds-'));
function file(name: string, content: string | Buffer): string {
  const path = join(tmp, name);
  writeFileSync(path, content);
  return path;
}

/** Exit 2, nothing on stdout, one printable line on stderr that contains `expected`. */
function refused(r: Run, expected: string | RegExp): void {
  expect(r.stdout).toBe('');
  expect(r.code).toBe(2);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(typeof expected === 'string' ? new RegExp(expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : expected);
  // Never a raw control character (the newline ending the line aside).
  expect(r.stderr.trimEnd()).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
}

const sim = (topology: string, ...rest: string[]) => cli('swarm-sim', '--topology', topology, ...rest);

describe.concurrent('CLI input files', () => {
  it('refuses a device, a FIFO and a directory before reading a byte', async () => {
    const fifo = join(tmp, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const [zero, pipe, dir] = await Promise.all([sim('/dev/zero'), sim(fifo), sim(tmp)]);
    refused(zero, '/dev/zero: cannot read file: it is a character device, not a regular file');
    refused(pipe, 'it is a named pipe (FIFO), not a regular file');
    refused(dir, 'it is a directory, not a regular file');
  });

  it(`refuses a file over ${INPUT_LIMIT_BYTES} bytes, naming the limit`, async () => {
    const big = file('big.json', Buffer.alloc(INPUT_LIMIT_BYTES + 1, 0x20));
    refused(await sim(big), 'over the 4.0 MiB limit for input files');
  });

  it('names a duplicate key with its JSON path, a BOM, and escapes NUL bytes and binary', async () => {
    const dup = file('dup.json', '{"models":[{"id":"m","layers":2}],"nodes":[{"id":"a","memoryGb":4,"id":"b"}]}');
    const bom = file('bom.json', '\ufeff{"models":[{"id":"m","layers":2}],"nodes":[{"id":"a","memoryGb":4}]}');
    const nul = file('nul.json', '{"models\u0000":1}');
    const bin = file('bin.json', Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x1b]));
    const esc = file('esc.json', '{"models":[{"id":"m","layers":2}],"nodes":[{"id":"a\\u001b[31mx","memoryGb":4},{"id":"a\\u001b[31mx","memoryGb":4}]}');
    const [d, b, n, x, e] = await Promise.all([sim(dup), sim(bom), sim(nul), sim(bin), sim(esc)]);
    refused(d, /\$\.nodes\[0\]\.id: invalid JSON at line 1 column \d+: duplicate key "id"/);
    refused(b, 'byte-order mark (BOM, U+FEFF)');
    refused(n, 'control character U+0000 inside a string');
    refused(x, 'it is not UTF-8 text');
    refused(e, 'duplicate node id "a\\u001b[31mx"');
  });

  it('refuses a topology over the plan-size limits up front', async () => {
    const models = [{ id: 'a', layers: 6000 }, { id: 'b', layers: 6000 }];
    const over = file('over.json', JSON.stringify({ models, nodes: [{ id: 'n', memoryGb: 1e6 }, { id: 'm', memoryGb: 1e6 }] }));
    refused(await sim(over), `over the limit of ${TOPOLOGY_LIMITS.totalLayers}`);
    const many = file('many.json', JSON.stringify({ models: Array.from({ length: TOPOLOGY_LIMITS.models + 1 }, (_, i) => ({ id: `m${i}`, layers: 1 })), nodes: [{ id: 'n', memoryGb: 1e6 }] }));
    refused(await sim(many), '$.models');
  });
});

describe.concurrent('CLI output paths and flags', () => {
  it('an --out that cannot be written fails at once, before the simulation', async () => {
    const [proc, devnull] = await Promise.all([
      cli('load-sim', '--seeds', '1', '--requests', '100', '--workload', 'w1', '--out', '/proc/self/x'),
      cli('load-sim', '--seeds', '1', '--requests', '100', '--workload', 'w1', '--out', '/dev/null/x'),
    ]);
    refused(proc, 'flag --out: cannot create "/proc/self/x"');
    refused(devnull, 'flag --out: cannot use "/dev/null/x": a part of the path is not a directory');
  });

  it('an --html that cannot be written fails before the run', async () => {
    refused(await sim('examples/swarm.json', '--html', '/dev/null/x'), 'flag --html: cannot write "/dev/null/x"');
  });

  it('load-sim refuses --seeds × --requests over the limit, naming it', async () => {
    refused(await cli('load-sim', '--seeds', '100', '--requests', '1000000'), `over the limit of ${LOAD_SIM_LIMITS.work}`);
  });

  it('load-sim refuses --seeds × --sessions over the limit for W6, naming it', async () => {
    refused(await cli('load-sim', '--seeds', '100', '--sessions', '49', '--workload', 'w6'), `over the limit of ${LOAD_SIM_LIMITS.sessionWork} for w6-kills`);
    refused(await cli('load-sim', '--seeds', '2', '--sessions', '10000', '--requests', '100'), `--seeds × --sessions is 20000, over the limit of ${LOAD_SIM_LIMITS.sessionWork}`);
  });

  it('runSessionSim refuses seeds × sessions over the limit before it runs', async () => {
    await expect(runSessionSim({ seeds: 100, sessions: 49 })).rejects.toThrow(new RegExp(`seeds × sessions is 4900, over the limit of ${LOAD_SIM_LIMITS.sessionWork}`));
    await expect(runSessionSim({ sessions: 1.5 })).rejects.toBeInstanceOf(InputError);
  });

  it('load-sim prints progress lines on stderr when it is not a terminal and the run is long', async () => {
    const r = await cli('load-sim', '--seeds', '1', '--requests', '5000', '--workload', 'w1');
    expect(r.code).toBe(0);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(5);
    expect(lines.at(-1)).toMatch(/^hecate-node load-sim: 100% \(\d+\/\d+ runs/);
  });

  it('--inspect accepts only literal loopback addresses', () => {
    expect(() => parseInspectUrl('ws://evil.localhost:9')).toThrow(UsageError);
    expect(() => parseInspectUrl('ws://localhost.:9')).toThrow(UsageError);
    for (const ok of ['ws://localhost:9', 'ws://127.0.0.1:9', 'ws://127.3.2.1:9', 'ws://[::1]:9']) expect(parseInspectUrl(ok).port).toBe('9');
  });

  it('names an unknown command without echoing control characters; toString is not a command', async () => {
    const [weird, inherited] = await Promise.all([cli('sim\u001b[2J'), cli('toString')]);
    refused(weird, 'unknown command "sim\\u001b[2J"');
    refused(inherited, 'unknown command "toString"');
  });
});
