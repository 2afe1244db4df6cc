/**
 * Cancellation and draining with real processes (docs/serve.md, "Cancellation", "Draining"):
 * `hecate-node serve` and two `hecate-node agent`s (one copy in two stages). 40 concurrent
 * generates, every other client hangs up mid-generation: each agent must end holding no session
 * and running no call, the orchestrator no lease, the hang-ups counted as `Cancelled` (the full 200
 * is `bench/serve-cancel.ts`). Then SIGTERM: a short generation finishes within the grace period, a
 * long one and a new one are answered 503 `Draining` with `Retry-After`, and the process exits 0.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelRun } from './cancel-run.js';
import { startCli, stopAll, waitFor, type Child } from './processes.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-cancel-'));
const tokenFile = join(dir, 'swarm-token');
let url = '';
let serve: Child;
let agents: string[] = [];

beforeAll(async () => {
  const started = await startCli('serve', ['serve', '--port', '0', '--layers', '8', '--pipelines', '1', '--drain-ms', '800', '--token-file', tokenFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true }); // its hang-ups and its exit are the point
  serve = started.child;
  url = started.match;
  agents = await Promise.all(['c1', 'c2'].map(async (id) => (await startCli(id, ['agent', '--id', id, '--memory', '5', '--score', '1', '--join', url, '--port', '0', '--per-layer-ms', '3', '--jitter', '0', '--token-file', tokenFile], /listening on (http:\/\/\S+?),/)).match));
  await waitFor('the swarm planned over the two agents', async () => {
    const s = (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { state: string }[] };
    return s.status === 'healthy' && s.nodes.length === 2 && s.nodes.every((n) => n.state === 'alive') ? true : undefined;
  }, 20_000);
}, 30_000);

afterAll(stopAll);

const generate = (steps: number) => fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: `drain ${steps}`, steps }) });
const health = async (agent: string) => (await fetch(`${agent}/v1/health`)).json() as Promise<{ sessions: number; calls: number }>;

describe('serve with real processes', () => {
  it('client disconnect = cancel: 40 generates, half hung up; every agent back to 0 sessions and 0 calls, no lease left', async () => {
    // 40 steps of 2 × 4 layers at 3 ms: about 1 s each; the hang-ups come 200–600 ms in, spread, so a
    // loaded machine's orchestrator has read the requests before most of them.
    const figures = await cancelRun(url, agents, { generates: 40, steps: 40, abortAfterMs: [200, 600], timeoutMs: 8000 });
    expect(figures.failures).toEqual([]);
    expect(figures.ok).toBe(20);
    expect(figures.hungUp).toBe(20);
    expect(Math.max(...figures.peakSessions)).toBeGreaterThan(0); // the agents did hold the sessions
    expect(figures.metrics.get('hecate_leases')).toBe(0);
    // A hang-up before the orchestrator read the request is no generation at all; the others are cancelled.
    const cancelled = figures.metrics.get('hecate_requests_total{outcome="Cancelled"}') ?? 0;
    expect(cancelled).toBeGreaterThan(10);
    expect(cancelled).toBeLessThanOrEqual(20);
    expect(figures.metrics.get('hecate_requests_total{outcome="ok"}')).toBe(20);
    expect(figures.metrics.get('hecate_session_drops_total{outcome="ok"}')).toBeGreaterThanOrEqual(20 * 2 + cancelled); // each finished one on both agents, each cancelled one on at least one
    // The hung-up sessions' running calls were given up, not left to finish.
    expect((figures.metrics.get('hecate_stage_calls_total{node="c1",outcome="aborted"}') ?? 0) + (figures.metrics.get('hecate_stage_calls_total{node="c2",outcome="aborted"}') ?? 0)).toBeGreaterThan(0);
  }, 30_000);

  it('SIGTERM drains: the short generation finishes, the long one and a new one get 503 Draining with Retry-After, exit 0', async () => {
    const short = generate(2);
    const long = generate(400); // ~10 s of stage work: past the 0.8 s grace
    await waitFor('both generations on the agents', async () => ((await Promise.all(agents.map(health))).some((h) => h.sessions >= 1) ? true : undefined), 5000, 10);
    serve.process.kill('SIGTERM');
    await waitFor('serve draining', () => (serve.stderr().includes('draining') ? true : undefined), 5000, 10);
    const refused = await generate(1);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('Draining');
    expect((await short).status).toBe(200);
    const handedBack = await long;
    expect(handedBack.status).toBe(503);
    expect(handedBack.headers.get('retry-after')).toBe('1');
    expect(((await handedBack.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'Draining', message: expect.stringMatching(/grace period of 800 ms/) });
    expect(await serve.exited).toBe('exit 0');
    expect(serve.stderr()).toMatch(/drained: 1 generations finished, 1 handed back/);
    await waitFor('the agents dropped the handed-back session', async () => ((await Promise.all(agents.map(health))).every((h) => h.sessions === 0 && h.calls === 0) ? true : undefined), 5000, 20);
  }, 30_000);
});
