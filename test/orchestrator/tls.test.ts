/**
 * `--tls-cert`, `--tls-key` and `--ca` (docs/security.md, "TLS"): a serve and an agent on https with a
 * self-signed certificate made here with openssl, serving a generate, and an upstream agent's
 * completion streamed through serve over https; and serve refusing to bind
 * beyond loopback without TLS unless `--insecure` is given.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/runtime/clock.js';
import { createPeerPoster } from '../../src/net/peer-post.js';
import { streamPost } from '../../src/net/peer-stream.js';
import { Agent } from 'undici';
import { scriptedRun, startScriptedUpstream } from '../agent/upstream/scripted-upstream.js';
import { expectedDigest } from '../../src/wire/digest.js';
import { cli } from '../cli/run-cli.js';
import { startCli, stopAll, waitFor } from './processes.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-tls-'));
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
const token = join(dir, 'swarm-token');

beforeAll(() => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
});

afterAll(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

describe('serve and agent over TLS (real processes)', () => {
  it('join, heartbeat and serve a generate over https, trusting the CA given', async () => {
    const tls = ['--tls-cert', cert, '--tls-key', key, '--ca', cert, '--token-file', token];
    const serveUrl = (await startCli('serve', ['serve', '--port', '0', '--layers', '4', '--pipelines', '1', ...tls], /listening on (https:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true })).match;
    const agentUrl = (await startCli('a1', ['agent', '--id', 'a1', '--memory', '8', '--score', '2', '--per-layer-ms', '0.5', '--join', serveUrl, ...tls], /listening on (https:\/\/\S+),/)).match;
    expect(agentUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const poster = createPeerPoster({ clock: systemClock, ca: readFileSync(cert, 'utf8') });
    try {
      const status = async (): Promise<any> => (await poster.post(`${serveUrl}/v1/status`, '', AbortSignal.timeout(5000), 'GET')).json();
      const a1 = await waitFor('a1 alive over https', async () => (await status()).nodes.find((n: { id: string; state: string; heartbeats: number }) => n.id === 'a1' && n.state === 'alive' && n.heartbeats > 0), 20_000);
      expect(a1.url).toBeNull(); // a client's view names no agent's address (the operator's does)
      const reply = await poster.post(`${serveUrl}/v1/generate`, JSON.stringify({ model: 'base', prompt: 'over tls', steps: 3 }), AbortSignal.timeout(10_000));
      expect(reply.status).toBe(200);
      expect(await reply.json()).toMatchObject({ digest: expectedDigest(4, 'over tls', 3), path: [{ nodeId: 'a1', layers: [0, 4] }] });
    } finally {
      poster.close();
    }
    // Without the CA the certificate is not trusted; plain http is not served.
    await expect(fetch(`${serveUrl}/v1/status`)).rejects.toThrow();
    await expect(fetch(`${serveUrl.replace('https:', 'http:')}/v1/status`)).rejects.toThrow();
  }, 60_000);
});

describe('the OpenAI door over TLS (real processes)', () => {
  it('streams a completion over https piece by piece: serve calls its upstream agent trusting the CA, and reads its answer as it arrives', async () => {
    const tls = ['--tls-cert', cert, '--tls-key', key, '--ca', cert, '--token-file', token];
    const engine = await startScriptedUpstream({ tokenMs: 25 });
    try {
      const serveUrl = (await startCli('serve-openai', ['serve', '--port', '0', '--layers', '4', '--pipelines', '1', ...tls], /listening on (https:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true })).match;
      await startCli('u1', ['agent', '--id', 'u1', '--memory', '4', '--score', '1', '--join', serveUrl, '--port', '0', '--upstream', `${engine.url}/v1`, ...tls], /listening on (https:\/\/\S+?),/, 30_000, { process: true });
      const client = new Agent({ connect: { ca: readFileSync(cert, 'utf8') } });
      const poster = createPeerPoster({ clock: systemClock, ca: readFileSync(cert, 'utf8') });
      try {
        await waitFor('u1 alive over https', async () => {
          const s = (await (await poster.post(`${serveUrl}/v1/status`, '', AbortSignal.timeout(5000), 'GET')).json()) as { status: string };
          return s.status === 'healthy' ? true : undefined;
        }, 20_000);
        const body = { model: 'base', prompt: 'over tls, streamed', max_tokens: 8 };
        const reply = await streamPost(client, `${serveUrl}/v1/completions`, { 'content-type': 'application/json' }, JSON.stringify({ ...body, stream: true }), AbortSignal.timeout(10_000));
        expect(reply.status).toBe(200);
        const arrivals: number[] = [];
        let text = '';
        await reply.read((chunk) => {
          arrivals.push(performance.now());
          text += chunk.toString('utf8');
        });
        const pieces = text.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => (JSON.parse(e.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? '');
        expect(pieces.join('')).toBe(scriptedRun('/v1/completions', { ...body, model: 'scripted' }).tokens.join(''));
        expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
        // 8 tokens 25 ms apart: they come as they are made, not in one piece at the end.
        expect(arrivals.length).toBeGreaterThanOrEqual(4);
        expect((arrivals.at(-1) as number) - (arrivals[0] as number)).toBeGreaterThan(75);
      } finally {
        poster.close();
        await client.close();
      }
    } finally {
      await engine.close();
    }
  }, 60_000);
});

describe('serve beyond loopback', () => {
  it('refuses a non-loopback --host without TLS: one line naming the flag, exit 2', async () => {
    const run = await cli('serve', '--host', '0.0.0.0', '--port', '0', '--token-file', token);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe('hecate-node serve: flag --host: 0.0.0.0 is not loopback and there is no TLS; give --tls-cert and --tls-key, or --insecure to serve plain http there');
  });

  it('--insecure lifts the refusal (here the address is not this machine\'s: the bind itself fails)', async () => {
    const run = await cli('serve', '--host', '192.0.2.1', '--port', '0', '--insecure', '--token-file', token);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('flag --host/--port: cannot listen on 192.0.2.1:0 (EADDRNOTAVAIL)');
  });

  it('needs the certificate and its key together, and PEM files', async () => {
    expect((await cli('serve', '--tls-cert', cert, '--token-file', token)).stderr).toContain('flag --tls-cert needs --tls-key FILE');
    const notPem = await cli('serve', '--tls-cert', token, '--tls-key', key, '--token-file', token);
    expect(notPem.code).toBe(2);
    expect(notPem.stderr).toContain(`flag --tls-cert: ${token}: the TLS certificate is not PEM`);
  });
});
