/**
 * Idempotency keys within bounds, on a real serve (docs/serve.md, "Idempotent generation"): a
 * keyed request refused by admission (429) leaves no record behind, and a tokenless caller's key
 * is its own (its source address's): another caller cannot probe it (409 vs 200), squat it, see
 * its progress (409 InProgress) or read its answer.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedDigest } from '../../src/wire/digest.js';
import { stopAll, waitFor } from './processes.js';
import { postJson, removeServeDirs, startAgentCli, startServe, statusNodes, topologyFile, type StartedServe } from './edge-helpers.js';

const topology = topologyFile('idempotency', { models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }], nodes: [{ id: 'h0', memoryGb: 16, score: 3, slots: 1 }] });
let serve: StartedServe;

beforeAll(async () => {
  serve = await startServe('serve keys', ['--topology', topology, '--queue-size', '0', '--per-layer-ms', '2']);
  await startAgentCli('h0', serve, 16, 3, ['--jitter', '0', '--slots', '1', '--per-layer-ms', '2']);
  await waitFor('h0 alive', async () => ((await statusNodes(serve.url)).get('h0')?.state === 'alive' ? true : undefined), 10_000, 50);
}, 60_000);

afterAll(async () => {
  await stopAll();
  removeServeDirs();
});

/** A keyed generation from source address `from`. */
function keyed(key: string, prompt: string, steps: number, from = '127.0.0.1'): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(serve.url);
  const body = JSON.stringify({ model: 'base', prompt, steps });
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path: '/v1/generate', method: 'POST', localAddress: from, headers: { 'content-type': 'application/json', 'idempotency-key': key, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('idempotency keys', () => {
  it('refused by admission (429) leave no record: the key then runs another request', async () => {
    const holder = postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: 'holds the slot', steps: 40 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await Promise.all(Array.from({ length: 20 }, (_, i) => keyed(`refused-${i}`, 'first', 2)));
    expect(refused.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 429));
    expect((await holder).status).toBe(200);
    // Had a refused request left its record, another request under its key would be 409 KeyReused.
    const again = await keyed('refused-0', 'another prompt', 2);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.digest).toBe(expectedDigest(12, 'another prompt', 2));
  }, 30_000);

  it('are their caller\'s: another address cannot probe, squat, watch or read a key', async () => {
    const mine = keyed('shared-k', 'mine', 20);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // While it runs: another caller's same key is its own (not 409 InProgress with the owner's progress).
    const other = keyed('shared-k', 'theirs', 2, '127.0.0.2');
    const [a, b] = await Promise.all([mine, other]);
    expect(a.status).toBe(200);
    expect([200, 429]).toContain(b.status); // its own request: run, or refused by admission while mine holds the slot
    expect(b.body.error?.code).not.toBe('InProgress');
    // After: the other caller's same key with another request is not KeyReused (no probe), and
    // with the same request it runs its own generation (not reading mine).
    const probe = await keyed('shared-k', 'theirs', 2, '127.0.0.2');
    expect(probe.status).toBe(200);
    const copy = await keyed('shared-k', 'mine', 20, '127.0.0.3');
    expect(copy.status).toBe(200);
    expect(copy.body.sessionId).not.toBe(a.body.sessionId);
    // The owner's retry reads its stored answer.
    const retry = await keyed('shared-k', 'mine', 20);
    expect(retry.body.sessionId).toBe(a.body.sessionId);
  }, 30_000);
});
