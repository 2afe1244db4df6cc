import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentKeyHeaders, loadAgentKey, verifyAgentSignature } from '../../../src/wire/agent-key.js';
import type { SignedParts } from '../../../src/wire/request-signing.js';
import { ensureSecretFile, readSecretFile } from '../../../src/net/secret-file.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const parts: SignedParts = { audience: 'swarm/lab', method: 'POST', path: '/v1/nodes', timestamp: 1, nonce: 'b'.repeat(32), body: '{"id":"a1"}' };

describe('loadAgentKey', () => {
  it('makes a key pair once (mode 0600) and reads the same one back', () => {
    const path = join(dir, 'sub', 'agent-a1.json');
    const first = loadAgentKey(path, 'a1');
    expect(first.created).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const again = loadAgentKey(path, 'a1');
    expect(again.created).toBe(false);
    expect(again.key.publicKey).toBe(first.key.publicKey);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ id: 'a1', publicKey: first.key.publicKey });
  });

  it('refuses another agent\'s file, a file others can read, and one that is not a state file', () => {
    const path = join(dir, 'agent-a2.json');
    loadAgentKey(path, 'a2');
    expect(() => loadAgentKey(path, 'a3')).toThrow(`${path}: holds the key of agent "a2", not "a3"; give each agent its own --state-file`);
    chmodSync(path, 0o644);
    expect(() => loadAgentKey(path, 'a2')).toThrow(/group or others can read the agent's private key/);
    const junk = join(dir, 'junk.json');
    writeFileSync(junk, 'not json', { mode: 0o600 });
    expect(() => loadAgentKey(junk, 'a1')).toThrow(/junk\.json: cannot read the agent's state file/);
  });
});

describe('agent signatures', () => {
  it('verify with the signer\'s key for its id and request only', () => {
    const a = loadAgentKey(join(dir, 'sig-a.json'), 'a1').key;
    const b = loadAgentKey(join(dir, 'sig-b.json'), 'a1').key;
    const headers = agentKeyHeaders(a, parts);
    const signature = headers['x-hecate-agent-signature'] as string;
    expect(headers['x-hecate-agent-key']).toBe(a.publicKey);
    expect(verifyAgentSignature(a.publicKey, signature, 'a1', parts)).toBe(true);
    expect(verifyAgentSignature(b.publicKey, signature, 'a1', parts)).toBe(false);
    expect(verifyAgentSignature(a.publicKey, signature, 'a2', parts)).toBe(false);
    expect(verifyAgentSignature(a.publicKey, signature, 'a1', { ...parts, body: '{"id":"a1","url":"http://x"}' })).toBe(false);
    expect(verifyAgentSignature('not a key', signature, 'a1', parts)).toBe(false);
  });
});

describe('secret files', () => {
  it('are created once with mode 0600 and read back; short or open ones are refused', () => {
    const path = join(dir, 'swarm-token');
    const made = ensureSecretFile(path);
    expect(made.created).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(made.secret.length).toBe(64);
    expect(ensureSecretFile(path)).toEqual({ secret: made.secret, created: false });
    const short = join(dir, 'short');
    writeFileSync(short, 'abc\n', { mode: 0o600 });
    expect(() => readSecretFile(short)).toThrow(`${short}: the secret is 3 characters long; at least 32 are needed`);
    chmodSync(path, 0o640);
    expect(() => readSecretFile(path)).toThrow(`${path}: group or others can read it (mode 640); chmod 600 ${path}`);
  });
});
