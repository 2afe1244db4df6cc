/**
 * The cap on an agent's reply holds over https too (docs/security.md): with `--ca` the
 * orchestrator's stage calls go through `node:https` (peer-post.ts), which reads a reply whole
 * before it is checked, so the check of stage-reply.ts must apply to what it read. A rogue member
 * (fixtures/rogue-agent.mjs, over TLS) holds the first stage of the one copy, an honest agent the
 * second; a reply past the 1 MiB cap, whether under the https reader's own limit (2 MiB of spaces
 * before a well-formed reply, which parses) or far past it (64 MiB), is charged to the rogue and
 * ejects it, the honest agent never called, never a 200 or a 500.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/runtime/clock.js';
import { createPeerPoster, type PeerPoster } from '../../src/net/peer-post.js';
import { STAGE_REPLY_LIMIT_BYTES } from '../../src/orchestrator/stage-reply.js';
import { parseMetrics, stopAll, waitFor } from './processes.js';
import { removeServeDirs, rssMb, startAgentCli, startRogue, startServe, topologyFile, type StartedServe } from './edge-helpers.js';

const topology = topologyFile('blame-tls', {
  models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }],
  // The faster node takes the first stage: the rogue, upstream of the honest h1.
  nodes: [
    { id: 'imp', memoryGb: 6, score: 3 },
    { id: 'h1', memoryGb: 6, score: 1 },
  ],
});

const dir = mkdtempSync(join(tmpdir(), 'hecate-blame-tls-'));
const tls = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
let serve: StartedServe;
let poster: PeerPoster | undefined;

beforeAll(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', tls.key, '-out', tls.cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const flags = ['--tls-cert', tls.cert, '--tls-key', tls.key, '--ca', tls.cert];
  serve = await startServe('serve tls', ['--topology', topology, '--eject-after', '2', ...flags], { process: true });
  await startAgentCli('h1', serve, 6, 1, flags);
  poster = createPeerPoster({ clock: systemClock, ca: readFileSync(tls.cert, 'utf8') });
}, 60_000);

afterAll(async () => {
  poster?.close();
  await stopAll();
  removeServeDirs();
  rmSync(dir, { recursive: true, force: true });
});

const get = async (path: string): Promise<string> => (await (poster as PeerPoster).post(`${serve.url}${path}`, '', AbortSignal.timeout(5000), 'GET')).text();
const stageCalls = async (node: string, outcome: string): Promise<number> => parseMetrics(await get('/metrics')).get(`hecate_stage_calls_total{node="${node}",outcome="${outcome}"}`) ?? 0;
const stateOf = async (id: string): Promise<string | undefined> => ((JSON.parse(await get('/v1/status')) as { nodes: { id: string; state: string }[] }).nodes.find((n) => n.id === id)?.state);

describe('a rogue first stage over https', () => {
  for (const mb of [2, 64]) {
    it(`replying ${mb} MiB (the cap is ${STAGE_REPLY_LIMIT_BYTES / 1024 / 1024} MiB) is charged and ejected; the honest agent after it is never called`, async () => {
      const rogue = await startRogue(serve, 'imp', 6, 3, 'huge', String(mb), tls);
      try {
        await waitFor('imp alive', async () => ((await stateOf('imp')) === 'alive' ? true : undefined), 10_000, 50);
        // Its copy whole again (the Swarm's status, not only imp's state): else a generation is refused as degraded before imp is called.
        await waitFor('the swarm healthy', async () => ((JSON.parse(await get('/v1/status')) as { status: string }).status === 'healthy' ? true : undefined), 10_000, 50);
        const h1Ok = await stageCalls('h1', 'ok');
        const rssBefore = rssMb(serve.child.process.pid as number);
        const answers: { status: number; body: string }[] = [];
        for (let i = 0; i < 3; i++) {
          const reply = await (poster as PeerPoster).post(`${serve.url}/v1/generate`, JSON.stringify({ model: 'base', prompt: `p${i}`, steps: 2 }), AbortSignal.timeout(20_000));
          answers.push({ status: reply.status, body: await reply.text() });
        }
        for (const a of answers) expect(a.status, a.body).toBe(503);
        expect(await stateOf('imp')).toBe('down');
        expect(await stateOf('h1')).toBe('alive');
        expect(await stageCalls('h1', 'ok')).toBe(h1Ok);
        expect(await stageCalls('imp', 'error')).toBeGreaterThanOrEqual(2);
        expect(rssMb(serve.child.process.pid as number) - rssBefore).toBeLessThan(50);
      } finally {
        await rogue.kill();
      }
    }, 60_000);
  }
});
