/**
 * A real-token completion goes through the same admission as `POST /v1/generate` (in process,
 * loopback, one reference-engine agent): the caller's class is admitted in its band (its wait in
 * `hecate_admission_wait_seconds{class}`), held to its `maxInFlight` (429 past it, counted as an
 * admission rejection), and refused, before anything runs, an idempotency key in a malformed
 * header.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { ReferenceEngine } from '../../src/agent/engines/reference/reference-engine.js';
import { makeModel } from '../../src/model/make-model.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import type { ClientClass } from '../../src/orchestrator/client-classes.js';
import { readServedModel } from '../../src/orchestrator/served-model.js';
import { parseMetrics, waitFor } from './processes.js';

const LAYERS = 2;
let work: string;
let orchestrator: RunningOrchestrator;
let agent: RunningAgent;

const batch: ClientClass = { name: 'batch', priority: -1, maxInFlight: 1, deadlineMs: undefined, token: undefined };
const standard: ClientClass = { name: 'standard', priority: 0, maxInFlight: Number.POSITIVE_INFINITY, deadlineMs: undefined, token: undefined };

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hecate-cls-'));
  const dir = join(work, 'tiny');
  await makeModel(dir, { layers: LAYERS, hidden: 32, heads: 4, kvHeads: 2, intermediate: 64, seed: 3 });
  const served = await readServedModel(dir, 1);
  orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]), classes: { classes: [standard, batch], defaultClass: standard }, verifySample: 0 });
  agent = await startAgent({ id: 'c1', memoryGb: (served.spec.layerGb ?? 1) * LAYERS * 2, score: 1, join: orchestrator.url, engine: new ReferenceEngine({ models: new Map([[served.text.id, dir]]) }) });
  await waitFor('the plan', () => (orchestrator.swarm() !== undefined ? true : undefined), 20_000, 20);
});

afterAll(async () => {
  await agent.stop().catch(() => {});
  await orchestrator.close();
  rmSync(work, { recursive: true, force: true });
});

const complete = (body: object, headers: Record<string, string> = {}) => fetch(`${orchestrator.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: 'tiny', prompt: [1, 2, 3], temperature: 0, ...body }) });
const metrics = async () => parseMetrics(await (await fetch(`${orchestrator.url}/metrics`)).text());

describe('a completion\'s admission', () => {
  it('is admitted in its class\'s band and held to its class\'s maxInFlight', async () => {
    expect((await complete({ max_tokens: 4 }, { 'x-hecate-class': 'batch' })).status).toBe(200);
    expect((await complete({ max_tokens: 4 })).status).toBe(200);
    let m = await metrics();
    expect(m.get('hecate_admission_wait_seconds_count{class="batch"}')).toBe(1);
    expect(m.get('hecate_admission_wait_seconds_count{class="standard"}')).toBe(1);

    // One batch completion streaming, a second of the class is refused at once.
    const running = await complete({ max_tokens: 400, stream: true }, { 'x-hecate-class': 'batch' });
    const reader = (running.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // its first chunk: it holds the class's one place
    const second = await complete({ max_tokens: 4 }, { 'x-hecate-class': 'batch' });
    expect(second.status).toBe(429);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe('RateLimited');
    expect((await metrics()).get('hecate_admission_rejections_total{reason="RateLimited"}')).toBe(1);
    expect((await complete({ max_tokens: 4 })).status).toBe(200); // another class is not held by it
    await reader.cancel();
    await waitFor('the class\'s place freed', async () => ((await metrics()).get('hecate_class_inflight{class="batch"}') ?? 0) === 0 ? true : undefined, 10_000, 20);
    expect((await complete({ max_tokens: 4 }, { 'x-hecate-class': 'batch' })).status).toBe(200);
    m = await metrics();
    expect(m.get('hecate_admission_wait_seconds_count{class="batch"}')).toBe(3);
  });

  it('refuses a malformed Idempotency-Key, naming the header, before anything runs', async () => {
    const before = (await metrics()).get('hecate_session_steps_total') ?? 0;
    const r = await complete({ max_tokens: 4 }, { 'idempotency-key': 'not a key!' });
    expect(r.status).toBe(400);
    expect(JSON.stringify(await r.json())).toMatch(/Idempotency-Key header/);
    expect((await metrics()).get('hecate_session_steps_total') ?? 0).toBe(before);
  });
});
