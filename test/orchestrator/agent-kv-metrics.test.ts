/**
 * Each agent's KV bytes on the orchestrator's `/metrics` (in process, loopback): a reference-engine
 * agent reports its KV caches' bytes with every heartbeat, the orchestrator shows them as
 * `hecate_node_kv_bytes{node}`, refuses a malformed report (400 naming `kvBytes`, the gauge
 * unchanged), and drops the series once the agent leaves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../src/agent/agent.js';
import { ReferenceEngine } from '../../src/agent/engines/reference/reference-engine.js';
import { makeModel } from '../../src/model/make-model.js';
import { startOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { readServedModel, type ServedModel } from '../../src/orchestrator/served-model.js';
import { tokenTensor } from '../../src/wire/tensor.js';
import { waitFor } from './processes.js';

const LAYERS = 2;
let dir: string;
let served: ServedModel;

beforeAll(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'hecate-kvm-')), 'tiny');
  await makeModel(dir, { layers: LAYERS, hidden: 32, heads: 4, kvHeads: 2, intermediate: 64, seed: 5 });
  served = await readServedModel(dir, 1);
});

afterAll(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

const kvSeries = async (url: string): Promise<Map<string, number>> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return new Map([...text.matchAll(/^hecate_node_kv_bytes\{node="([^"]+)"\} (\S+)$/gm)].map((m) => [m[1] as string, Number(m[2])]));
};

describe('hecate_node_kv_bytes', () => {
  it('shows what each agent\'s heartbeat reports, refuses a malformed report, and forgets an agent that left', async () => {
    const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]) });
    const engine = new ReferenceEngine({ models: new Map([[served.text.id, dir]]) });
    const agent = await startAgent({ id: 'k1', memoryGb: (served.spec.layerGb ?? 1) * LAYERS * 2, score: 1, join: orchestrator.url, engine, heartbeatMs: 20 });
    try {
      await waitFor('k1 reporting no KV yet', async () => ((await kvSeries(orchestrator.url)).get('k1') === 0 ? true : undefined), 10_000, 20);
      // A session's cache on the agent: room for at least its 5 tokens of 2 layers × (K and V) × 2 KV heads × head dim 8 × 4 bytes.
      const span = { modelId: served.text.id, layerStart: 0, layerEnd: LAYERS, layers: LAYERS };
      await engine.load(span);
      await engine.step({ sessionId: 's', span, step: 0, input: tokenTensor([1, 2, 3, 4, 5]), signal: new AbortController().signal });
      const held = engine.holds().kvBytes ?? 0;
      const perToken = LAYERS * 2 * 2 * 8 * 4;
      expect(held % perToken).toBe(0);
      expect(held).toBeGreaterThanOrEqual(5 * perToken);
      expect(((await (await fetch(`${agent.url}/v1/health`)).json()) as { kvBytes: number }).kvBytes).toBe(held);
      await waitFor('k1 reporting its cache', async () => ((await kvSeries(orchestrator.url)).get('k1') === held ? true : undefined), 10_000, 20);

      const bad = await fetch(`${orchestrator.url}/v1/nodes/k1/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kvBytes: -1 }) });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { field: string } }).error.field).toBe('kvBytes');
      expect((await kvSeries(orchestrator.url)).get('k1')).toBe(held);
      // A heartbeat with no body is a bare heartbeat: it changes no report.
      expect((await fetch(`${orchestrator.url}/v1/nodes/k1/heartbeat`, { method: 'POST' })).status).toBe(200);
      expect((await kvSeries(orchestrator.url)).get('k1')).toBe(held);

      await agent.stop(); // it leaves: its series goes
      expect((await kvSeries(orchestrator.url)).has('k1')).toBe(false);
    } finally {
      await agent.stop().catch(() => {});
      await orchestrator.close();
    }
  });
});
