/**
 * serve's HTTP language for admission (docs/serve.md, "Admission"), the orchestrator and two agents
 * of one slot each in this process: with every copy full, a generation waits in the queue; past
 * the queue it is 429 with Retry-After, a sheddable class is 429 at once, a class deadline that
 * passes while waiting is 504; /metrics shows the queue per band, the saturation, the wait times
 * and the refusals by reason; a waiter whose client hangs up leaves the queue; in the end no lease
 * and no waiter is left.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import type { ClientClasses } from '../../src/orchestrator/client-classes.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { parseMetrics, waitFor } from './processes.js';

let orchestrator: RunningOrchestrator;
const agents: RunningAgent[] = [];
const classes: ClientClasses = {
  defaultClass: { name: 'standard', priority: 0, maxInFlight: Infinity, deadlineMs: undefined, token: undefined },
  classes: [
    { name: 'standard', priority: 0, maxInFlight: Infinity, deadlineMs: undefined, token: undefined },
    { name: 'batch', priority: -1, maxInFlight: Infinity, deadlineMs: undefined, token: undefined },
    { name: 'hurried', priority: 0, maxInFlight: Infinity, deadlineMs: 400, token: undefined },
  ],
};

beforeAll(async () => {
  orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: 4, pipelines: 1 }], admission: { queueSize: 2 }, classes });
  for (const id of ['q1', 'q2']) agents.push(await startAgent({ id, memoryGb: 2, score: 1, join: orchestrator.url, perLayerMs: 4, jitter: 0, slots: 1, heartbeatMs: 200 }));
  await Promise.all(agents.map((a) => a.joined));
  await waitFor('the swarm planned', () => (orchestrator.swarm() !== undefined ? true : undefined), 10_000, 20);
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await orchestrator.close();
});

const generate = (steps: number, cls?: string, signal?: AbortSignal) =>
  fetch(`${orchestrator.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json', ...(cls !== undefined ? { 'x-hecate-class': cls } : {}) }, body: JSON.stringify({ model: 'base', prompt: `q ${steps} ${cls}`, steps }), ...(signal !== undefined ? { signal } : {}) });
const metrics = async () => parseMetrics(await (await fetch(`${orchestrator.url}/metrics`)).text());
const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string; message: string } }).error;

describe('POST /v1/generate with admission', () => {
  it('queues when full, then 429 + Retry-After past the queue or for a sheddable class, 504 past a class deadline', async () => {
    // Two slots of one slot each, a copy of two stages: it holds 2 generations at once.
    const hangUp = new AbortController();
    const first = generate(60, undefined, hangUp.signal).catch(() => 'hung up');
    const second = generate(60);
    await waitFor('the copy full', async () => ((await metrics()).get('hecate_saturated') === 1 ? true : undefined), 5000, 10);
    const waiting = generate(2); // queued: band 0
    const hurried = generate(2, 'hurried'); // queued: band 0, its class deadline 400 ms
    await waitFor('two waiting in band 0', async () => ((await metrics()).get('hecate_admission_queue_depth{band="0"}') === 2 ? true : undefined), 5000, 10);

    const full = await generate(2);
    expect(full.status).toBe(429);
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await errorOf(full)).toMatchObject({ code: 'RateLimited', message: expect.stringMatching(/^Saturated: /) });
    const shed = await generate(2, 'batch');
    expect(shed.status).toBe(429);
    expect(shed.headers.get('retry-after')).not.toBeNull();

    const late = await hurried;
    expect(late.status).toBe(504);
    expect((await errorOf(late)).message).toMatch(/^DeadlineExceeded: /);

    hangUp.abort(); // the first client leaves: its slot goes to the waiter
    expect(await first).toBe('hung up');
    expect((await waiting).status).toBe(200);
    expect((await second).status).toBe(200);

    const m = await waitFor('no lease left', async () => {
      const now = await metrics();
      return now.get('hecate_leases') === 0 ? now : undefined;
    }, 5000, 20);
    expect(m.get('hecate_admission_rejections_total{reason="Saturated"}')).toBe(2);
    expect(m.get('hecate_admission_rejections_total{reason="DeadlineExceeded"}')).toBe(1);
    expect(m.get('hecate_admission_queue_depth{band="0"}') ?? 0).toBe(0);
    expect(m.get('hecate_saturated')).toBe(0);
    expect(m.get('hecate_capacity')).toBe(2);
    expect(m.get('hecate_admission_wait_seconds_count{class="standard"}')).toBe(3); // first, second, waiting
    expect(m.get('hecate_requests_total{outcome="Cancelled"}')).toBe(1);
    expect(m.get('hecate_requests_total{outcome="RateLimited"}')).toBe(2);
  }, 30_000);

  it('a waiter whose client hangs up leaves the queue, counted as Cancelled', async () => {
    const a = generate(40);
    const b = generate(40);
    await waitFor('the copy full', async () => ((await metrics()).get('hecate_saturated') === 1 ? true : undefined), 5000, 10);
    const leaving = new AbortController();
    const waiter = generate(2, undefined, leaving.signal).catch(() => 'hung up');
    await waitFor('one waiting', async () => ((await metrics()).get('hecate_admission_queue_depth{band="0"}') === 1 ? true : undefined), 5000, 10);
    leaving.abort();
    expect(await waiter).toBe('hung up');
    await waitFor('the queue empty', async () => ((await metrics()).get('hecate_admission_queue_depth{band="0"}') === undefined ? true : undefined), 5000, 10);
    expect((await metrics()).get('hecate_admission_rejections_total{reason="Cancelled"}')).toBe(1);
    expect((await a).status).toBe(200);
    expect((await b).status).toBe(200);
  }, 30_000);
});
