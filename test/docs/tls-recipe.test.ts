/**
 * docs/security.md "TLS" gives the `openssl` commands that make a CA and one certificate per
 * machine with its IP in subjectAltName. This test runs that block as printed in a temp dir (only
 * machine `a`'s IP becomes 127.0.0.1, so it can be reached here), serves https with `a.pem`, and
 * checks that a client trusting `ca.pem` connects by IP and one that does not is refused.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fencedBlocks } from '../markdown-blocks.js';

const repo = resolve(import.meta.dirname, '../..');
const text = readFileSync(join(repo, 'docs/security.md'), 'utf8').replace(/\r\n/g, '\n');
const section = text.slice(text.indexOf('\n## TLS\n'), text.indexOf('\n## NATS\n'));
const recipe = fencedBlocks(section).find((b) => b.lang === 'sh' && b.lines.some((l) => l.includes('openssl x509 -req')));
const A_IP = /for m in a:([\d.]+) /.exec(recipe?.lines.join('\n') ?? '')?.[1];

/** GETs `/` from the server by IP; resolves with the status, or rejects with the TLS error. */
function get(port: number, ca: Buffer | undefined): Promise<number> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path: '/', ca, agent: false }, (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    });
    req.on('error', fail);
    req.end();
  });
}

describe('docs/security.md "TLS": the certificate recipe', () => {
  let dir = '';
  let server: Server | undefined;
  let port = 0;

  beforeAll(async () => {
    expect(recipe, 'docs/security.md "TLS" has a sh block with the openssl commands').toBeDefined();
    expect(A_IP, 'the recipe names machine a with its IP').toBeDefined();
    dir = mkdtempSync(join(tmpdir(), 'hecate-tls-recipe-'));
    const script = `set -e\n${(recipe?.lines ?? []).join('\n').replace(`a:${A_IP ?? ''}`, 'a:127.0.0.1')}\n`;
    const run = spawnSync('sh', ['-c', script], { cwd: dir, encoding: 'utf8', timeout: 10_000 });
    expect(run.status, run.stderr).toBe(0);
    server = createServer({ cert: readFileSync(join(dir, 'a.pem')), key: readFileSync(join(dir, 'a-key.pem')) }, (_req, res) => res.end('ok'));
    await new Promise<void>((ready) => server?.listen(0, '127.0.0.1', ready));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((closed) => (server === undefined ? closed() : server.close(() => closed())));
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('makes a certificate whose IP subjectAltName a client trusting the CA accepts', async () => {
    expect(await get(port, readFileSync(join(dir, 'ca.pem')))).toBe(200);
  });

  it('is refused by a client that does not trust the CA', async () => {
    await expect(get(port, undefined)).rejects.toThrow(/self[- ]signed|unable to (get|verify)/i);
  });

  it('is refused for a certificate made for another IP (b.pem names b, not 127.0.0.1)', async () => {
    const other = createServer({ cert: readFileSync(join(dir, 'b.pem')), key: readFileSync(join(dir, 'b-key.pem')) }, (_req, res) => res.end('ok'));
    await new Promise<void>((ready) => other.listen(0, '127.0.0.1', ready));
    try {
      await expect(get((other.address() as AddressInfo).port, readFileSync(join(dir, 'ca.pem')))).rejects.toThrow(/IP: 127\.0\.0\.1 is not in the cert's list/);
    } finally {
      await new Promise<void>((closed) => other.close(() => closed()));
    }
  });
});
