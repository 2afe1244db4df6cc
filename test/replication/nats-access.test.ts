/**
 * NATS credentials and TLS (docs/security.md, "NATS"): a real nats-server whose config requires
 * TLS (a self-signed certificate made here with openssl, client certificates verified) and a user
 * (a password, or an NKey). Without the credentials or the CA the connection is refused with `ReplicationError` `Refused` saying which; with them a replica works.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSwarm, type ReplicatedSwarm } from '../../src/replication/index.js';
import { startCli, stopAll } from '../orchestrator/processes.js';
import { cli } from '../cli/run-cli.js';
import { NatsServer } from './nats-server.js';
import { CONFIG, PROFILES, swarmName, until } from './replicas.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-nats-tls-'));
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
const nkeyFile = join(dir, 'user.nk');
// An NKey user made for this test (`nk -gen user`): the server knows its public key, the client holds its seed.
const NKEY_SEED = 'SUAAYCXG7INOAQ5U7RTPKGPKNLPVJ7C3UATZHJLFJIYGQT43YRKZXS5P7I';
const NKEY_PUBLIC = 'UAKXUYRFTMFJ2FO2WAMA4KCEEHUT3OCDBQNHEU5RPS5ZSPXPHICSUULN';
let server: NatsServer | undefined;

beforeAll(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
  writeFileSync(nkeyFile, `${NKEY_SEED}\n`, { mode: 0o600 });
  // The self-signed certificate is the server's, its CA, and the client certificate it verifies.
  server = await NatsServer.start(`tls {\n  cert_file: "${cert}"\n  key_file: "${key}"\n  ca_file: "${cert}"\n  verify: true\n}\nauthorization {\n  users: [\n    { user: "hecate", password: "s3cret-pass" }\n    { nkey: "${NKEY_PUBLIC}" }\n  ]\n}\n`);
});

afterAll(async () => {
  await stopAll();
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const tls = { ca: cert, cert, key };
const connectWith = (nats: Parameters<typeof connectSwarm>[0]['nats'], swarm = swarmName('access')) => connectSwarm({ servers: server!.url, swarm, profiles: PROFILES, config: CONFIG, connectTimeoutMs: 5000, ...(nats !== undefined ? { nats } : {}) });

describe('a NATS server that requires credentials and TLS', () => {
  it('refuses a replica without its credentials or its CA, each with ReplicationError Refused saying which', async () => {
    await expect(connectWith({ tls })).rejects.toMatchObject({ name: 'ReplicationError', code: 'Refused', message: expect.stringMatching(/refused the connection: .*give it the credentials/i) });
    await expect(connectWith({ user: 'hecate', pass: 'wrong', tls })).rejects.toMatchObject({ code: 'Refused', message: expect.stringMatching(/credentials/) });
    await expect(connectWith({ user: 'hecate', pass: 's3cret-pass' })).rejects.toMatchObject({ code: 'Refused', message: expect.stringMatching(/TLS connection failed: .*give the CA/) });
  });

  it('serves with a user and password, or an NKey seed file, over TLS', async () => {
    const swarm = swarmName('access-ok');
    const opened: ReplicatedSwarm[] = [];
    try {
      const a = await connectWith({ user: 'hecate', pass: 's3cret-pass', tls }, swarm);
      opened.push(a);
      const b = await connectWith({ nkeyFile, tls }, swarm);
      opened.push(b);
      await a.markDown('phone');
      await until(() => b.node('phone')?.state === 'down', 'b to apply a\'s down');
      expect(b.digest()).toBe(a.digest());
      expect(b.node('phone')?.state).toBe('down');
    } finally {
      for (const r of opened) await r.close();
    }
  });
});

describe('hecate-node serve --nats with the NATS credential and TLS flags', () => {
  it('exits 2 naming --nats when the server refuses it, and serves with the flags', async () => {
    const token = join(dir, 'swarm-token');
    const passFile = join(dir, 'nats-pass');
    writeFileSync(passFile, 's3cret-pass\n', { mode: 0o600 });
    const base = ['serve', '--port', '0', '--topology', 'examples/swarm.json', '--nats', server!.url, '--swarm', 'cli', '--token-file', token, '--nats-ca', cert, '--nats-cert', cert, '--nats-key', key];
    const refused = await cli(...base);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/flag --nats: NATS server .* refused the connection: Authorization Violation/);
    const started = await startCli('serve-nats', [...base, '--nats-user', 'hecate', '--nats-pass-file', passFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const status = (await (await fetch(`${started.match}/v1/status`)).json()) as { replication?: { status: string } };
    expect(status.replication?.status).toBe('connected');
  }, 30_000);
});
