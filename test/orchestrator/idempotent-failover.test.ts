/**
 * No request is lost with its orchestrator (docs/serve.md, "Idempotent generation"): a real
 * nats-server, two `serve --nats` processes and two agents. A generation with an idempotency key
 * runs on A; once A has done some steps it is frozen and SIGKILLed; the client retries on B with
 * the same key (waiting out `Retry-After` while A's claim runs out) and gets the digest of an
 * uninterrupted run, B resuming from A's last checkpoint: the steps recomputed (A's steps seen
 * just before the kill, minus the checkpoint's) are at most the checkpoint interval. A retry
 * after that gets the stored answer. Every process started here is killed in afterAll.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectedDigest } from '../../src/wire/digest.js';
import { NatsServer } from '../replication/nats-server.js';
import { parseMetrics, startCli, stopAll, waitFor } from './processes.js';

const LAYERS = 12;
const STEPS = 24;
const EVERY = 4;
const KILL_AFTER_STEPS = 10;
const nodes = [1, 1].map((score, i) => ({ id: `f${i + 1}`, memoryGb: 6, score }));
const dir = mkdtempSync(join(tmpdir(), 'hecate-failover-'));
const topologyFile = join(dir, 'topology.json');
const tokenFile = join(dir, 'swarm-token');
writeFileSync(topologyFile, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 1 }], nodes }));
let nats: NatsServer | undefined;

afterAll(async () => {
  await stopAll();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an idempotent generation whose orchestrator dies', () => {
  it('resumes on the other orchestrator from the last checkpoint, with the digest of an uninterrupted run', async () => {
    nats = await NatsServer.start();
    const serveArgs = ['serve', '--port', '0', '--topology', topologyFile, '--nats', nats.url, '--swarm', 'failover', '--token-file', tokenFile, '--checkpoint-every', String(EVERY), '--claim-lease-ms', '1000'];
    const [a, b] = await Promise.all([startCli('serve A', serveArgs, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true }), startCli('serve B', serveArgs, /listening on (http:\/\/127\.0\.0\.1:\d+)/)]);
    await Promise.all(nodes.map((n) => startCli(n.id, ['agent', '--id', n.id, '--memory', String(n.memoryGb), '--score', String(n.score), '--join', `${a.match},${b.match}`, '--port', '0', '--per-layer-ms', '2', '--token-file', tokenFile], /listening on (http:\/\/\S+)/)));
    const allAlive = async (url: string) => {
      const s = (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { state: string }[] };
      return s.status === 'healthy' && s.nodes.length === nodes.length && s.nodes.every((n) => n.state === 'alive');
    };
    await waitFor('every agent alive on both orchestrators', async () => ((await allAlive(a.match)) && (await allAlive(b.match)) ? true : undefined), 30_000);

    const prompt = 'a request that outlives its orchestrator';
    const body = JSON.stringify({ model: 'base', prompt, steps: STEPS });
    const post = (url: string) => fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'failover-1' }, body });
    const onA = post(a.match).then((r) => `answered ${r.status}`, (error: unknown) => `unreachable: ${String(error)}`);
    const stepsOn = async (url: string) => parseMetrics(await (await fetch(`${url}/metrics`)).text()).get('hecate_session_steps_total') ?? 0;
    let seen = 0;
    await waitFor(() => `${KILL_AFTER_STEPS} steps on A (seen ${seen})`, async () => ((seen = await stepsOn(a.match)) >= KILL_AFTER_STEPS ? true : undefined), 30_000, 5);
    a.child.process.kill('SIGSTOP'); // nothing more leaves A: its steps done are those just seen (or one more)
    a.child.process.kill('SIGKILL');
    expect(await onA).toMatch(/^unreachable/);

    // The client retries on B with the same key, waiting as long as Retry-After says.
    const retriedAt = Date.now();
    let waits = 0;
    let answer: { status: number; body: any } | undefined;
    for (;;) {
      const r = await post(b.match);
      answer = { status: r.status, body: await r.json() };
      if (r.status !== 409 || answer.body.error.code !== 'InProgress') break;
      waits++;
      await sleep(Number(r.headers.get('retry-after')) * 1000);
    }
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.digest).toBe(expectedDigest(LAYERS, prompt, STEPS));
    const resumedFrom = answer.body.resumedFrom as number;
    expect(resumedFrom % EVERY).toBe(0);
    expect(resumedFrom).toBeGreaterThan(0);
    const recomputed = seen - resumedFrom;
    expect(recomputed).toBeGreaterThanOrEqual(0);
    expect(recomputed).toBeLessThanOrEqual(EVERY);
    expect(await stepsOn(b.match)).toBe(STEPS - resumedFrom); // B ran only what the checkpoint did not hold

    const again = await post(b.match);
    expect(await again.json()).toEqual(answer.body); // the stored answer
    expect(await stepsOn(b.match)).toBe(STEPS - resumedFrom);
    console.log(`idempotent failover: A killed after ${seen} of ${STEPS} steps; B answered ${Date.now() - retriedAt} ms after the first retry (${waits} InProgress answers while A's claim ran out), resumed from the checkpoint at step ${resumedFrom}: ${recomputed} steps recomputed (checkpoint every ${EVERY}), the uninterrupted digest ${answer.body.digest}`);
  }, 60_000);
});
