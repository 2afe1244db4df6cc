/**
 * `--pid-file` of `serve` and `agent`: the file holds this process's id while the command runs
 * and is gone after it, however it ended; a path that cannot be written is a usage error naming
 * the flag, and nothing runs.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCommandArgs, UsageError } from '../../src/cli/args.js';
import { PID_FILE_FLAG, withPidFile } from '../../src/cli/process-flags.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-pid-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const args = (...argv: string[]) => parseCommandArgs(argv, { flags: { 'pid-file': PID_FILE_FLAG } });

describe('withPidFile', () => {
  it('writes the process id before the command runs and removes the file after it', async () => {
    const path = join(dir, 'a1.pid');
    const seen = await withPidFile(args('--pid-file', path), async () => readFileSync(path, 'utf8'));
    expect(seen).toBe(`${process.pid}\n`);
    expect(existsSync(path)).toBe(false);
  });

  it('removes the file when the command throws, and passes the error on', async () => {
    const path = join(dir, 'a2.pid');
    await expect(withPidFile(args('--pid-file', path), async () => {
      expect(existsSync(path)).toBe(true);
      throw new Error('join refused');
    })).rejects.toThrow('join refused');
    expect(existsSync(path)).toBe(false);
  });

  it('refuses a path it cannot write with a UsageError naming the flag, and runs nothing', async () => {
    let ran = false;
    const path = join(dir, 'no-such-dir', 'a3.pid');
    const attempt = withPidFile(args('--pid-file', path), async () => {
      ran = true;
    });
    await expect(attempt).rejects.toThrow(UsageError);
    await expect(attempt).rejects.toThrow(`flag --pid-file: cannot write ${path} (ENOENT)`);
    expect(ran).toBe(false);
  });

  it('without the flag, just runs the command', async () => {
    expect(await withPidFile(args(), async () => 7)).toBe(7);
  });
});
