import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KeyBindings } from '../../../src/orchestrator/auth/key-bindings.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-bindings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keyA = 'A'.repeat(43);
const keyB = 'B'.repeat(43);

describe('KeyBindings', () => {
  it('binds an id to its first key only, until released', () => {
    const bindings = new KeyBindings();
    expect(bindings.claim('a1', keyA)).toBe(true);
    expect(bindings.claim('a1', keyB)).toBe(false);
    expect(bindings.claim('a1', keyA)).toBe(true);
    expect(bindings.keyOf('a1')).toBe(keyA);
    expect(bindings.release('a1')).toBe(true);
    expect(bindings.release('a1')).toBe(false);
    expect(bindings.claim('a1', keyB)).toBe(true);
  });

  it('with a file, outlives the instance: every change written (mode 0600), read back at start', () => {
    const file = join(dir, 'key-bindings.json');
    const first = new KeyBindings(file);
    first.claim('a2', keyB);
    first.claim('a1', keyA);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = new KeyBindings(file);
    expect([second.keyOf('a1'), second.keyOf('a2'), second.size]).toEqual([keyA, keyB, 2]);
    second.release('a2');
    expect(new KeyBindings(file).size).toBe(1);
  });

  it('refuses a file that is not a bindings file, naming it', () => {
    const junk = join(dir, 'junk.json');
    writeFileSync(junk, '{"bindings":{"a1":"short"}}');
    expect(() => new KeyBindings(junk)).toThrow(`${junk}: $.bindings.a1: expected an ed25519 public key (43 base64url characters)`);
    writeFileSync(junk, '[');
    expect(() => new KeyBindings(junk)).toThrow(/junk\.json: the key bindings are not JSON/);
  });
});
