/**
 * Cancellation with real processes (docs/serve.md, "Cancellation"): `hecate-node serve` and two
 * `hecate-node agent`s (one copy in two stages); 40 concurrent generates, every other client hangs up mid-generation. Each
 * agent must end holding no session and running no call (the hung-up sessions' calls cancelled and
 * every ended session dropped), the orchestrator holding no lease, the hang-ups counted as
 * `Cancelled`. The full 200 is `bench/serve-cancel.ts`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cancelRun } from './cancel-run.js';
import { startCli, stopAll, waitFor } from './processes.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-cancel-'));
const tokenFile = join(dir, 'swarm-token');

afterAll(stopAll);

describe('client disconnect = cancel, with real processes', () => {
  it('40 generates, half hung up: every agent back to 0 sessions and 0 calls, no lease left, hang-ups counted', async () => {
    const { match: url } = await startCli('serve', ['serve', '--port', '0', '--layers', '8', '--pipelines', '1', '--token-file', tokenFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const agents = await Promise.all(['c1', 'c2'].map(async (id) => (await startCli(id, ['agent', '--id', id, '--memory', '5', '--score', '1', '--join', url, '--port', '0', '--per-layer-ms', '3', '--jitter', '0', '--token-file', tokenFile], /listening on (http:\/\/\S+?),/)).match));
    await waitFor('the swarm planned over the two agents', async () => {
      const s = (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { state: string }[] };
      return s.status === 'healthy' && s.nodes.length === 2 && s.nodes.every((n) => n.state === 'alive') ? true : undefined;
    }, 20_000);
    const figures = await cancelRun(url, agents, { generates: 40, steps: 24, abortAfterMs: 200, timeoutMs: 5000 });
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
  }, 60_000);
});
