/**
 * Idempotent `POST /v1/generate` on one orchestrator (its checkpoints in memory) with two agents
 * in this process: a retry gets the stored answer; a key is checked, and refused for another
 * request; a second attempt while the first runs is 409 InProgress with Retry-After; a client
 * that goes away stops the stage calls and its retry resumes from the progress kept, with the
 * faultless digest. No timing is asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { ServeError } from '../../src/wire/serve-error.js';
import { expectedDigest } from '../../src/wire/digest.js';
import { parseMetrics, waitFor } from './processes.js';

const LAYERS = 6;
let orchestrator: RunningOrchestrator;
const agents: RunningAgent[] = [];

const generate = async (body: object, key?: string, signal?: AbortSignal) => {
  const response = await fetch(`${orchestrator.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json', ...(key !== undefined ? { 'idempotency-key': key } : {}) }, body: JSON.stringify(body), ...(signal !== undefined ? { signal } : {}) });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as any };
};
const stepsDone = async () => parseMetrics(await (await fetch(`${orchestrator.url}/metrics`)).text()).get('hecate_session_steps_total') ?? 0;

beforeAll(async () => {
  orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 1 }], checkpointEvery: 4, claimLeaseMs: 2000 });
  for (const [id, score] of [['i1', 1], ['i2', 1]] as const) agents.push(await startAgent({ id, memoryGb: 3, score, join: orchestrator.url, perLayerMs: 2, jitter: 0 }));
  await Promise.all(agents.map((a) => a.joined));
  await waitFor('the swarm planned', () => (orchestrator.swarm() !== undefined ? true : undefined), 10_000);
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await orchestrator.close();
});

describe('POST /v1/generate with an idempotency key', () => {
  it('answers a retry with the stored answer, the same bytes; a key reused for another request is 409 Conflict', async () => {
    const first = await generate({ model: 'base', prompt: 'once', steps: 6 }, 'key-once');
    expect(first.status).toBe(200);
    expect(first.body.digest).toBe(expectedDigest(LAYERS, 'once', 6));
    const before = await stepsDone();
    const again = await generate({ model: 'base', prompt: 'once', steps: 6, idempotencyKey: 'key-once' });
    expect(again.body).toEqual(first.body);
    expect(await stepsDone()).toBe(before); // nothing ran again
    const reused = await generate({ model: 'base', prompt: 'another', steps: 6 }, 'key-once');
    expect(reused.status).toBe(409);
    expect(reused.body.error).toMatchObject({ code: 'Conflict', field: 'idempotencyKey' });
  });

  it.each([
    [{ 'idempotency-key': 'a b' }, {}],
    [{}, { idempotencyKey: '' }],
    [{ 'idempotency-key': 'one' }, { idempotencyKey: 'two' }],
    [{}, { idempotencyKey: 7 }],
  ])('refuses a bad key (headers %j, body %j) with 400 naming idempotencyKey', async (headers, extra) => {
    const response = await fetch(`${orchestrator.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: 'base', prompt: 'x', steps: 1, ...extra }) });
    expect(response.status).toBe(400);
    expect(((await response.json()) as any).error.field).toBe('idempotencyKey');
  });

  it('answers a second attempt while the first runs 409 InProgress with Retry-After; a cancelled one resumes from its progress with the faultless digest', async () => {
    const body = { model: 'base', prompt: 'cancelled', steps: 60 };
    const client = new AbortController();
    const start = await stepsDone();
    const running = generate(body, 'key-cancel', client.signal).catch((error: unknown) => error);
    await waitFor('some steps done', async () => ((await stepsDone()) - start >= 9 ? true : undefined), 20_000, 10);
    const busy = await generate(body, 'key-cancel');
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'InProgress', field: 'idempotencyKey' });
    expect(Number(busy.retryAfter)).toBeGreaterThanOrEqual(1);
    client.abort();
    expect(await running).toBeInstanceOf(Error);
    let resumed: Awaited<ReturnType<typeof generate>> | undefined;
    await waitFor('the key let go', async () => {
      const r = await generate(body, 'key-cancel');
      if (r.status === 409 && r.body.error.code === 'InProgress') return undefined;
      resumed = r;
      return true;
    }, 10_000, 20);
    expect(resumed?.status).toBe(200);
    expect(resumed?.body.digest).toBe(expectedDigest(LAYERS, 'cancelled', 60));
    expect(resumed?.body.resumedFrom).toBeGreaterThanOrEqual(9);
    // Every step the cancelled run completed was kept: the two runs together ran each step once.
    expect((await stepsDone()) - start).toBe(60);
  });
});

describe('the idempotency options', () => {
  it.each([
    [{ checkpointEvery: 0 }, 'checkpointEvery'],
    [{ checkpointEvery: 1.5 }, 'checkpointEvery'],
    [{ claimLeaseMs: 10 }, 'claimLeaseMs'],
    [{ claimLeaseMs: 1000, checkpointTtlMs: 1999 }, 'checkpointTtlMs'],
  ])('refuses %j naming the option, before listening', async (options, field) => {
    const error = await startOrchestrator(options).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ServeError);
    expect((error as ServeError).field).toBe(field);
  });
});
