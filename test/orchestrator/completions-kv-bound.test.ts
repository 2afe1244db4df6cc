/**
 * An agent's KV caches are bounded by the KV memory the plan gave it (docs/completions.md, "KV
 * memory"), in this process on loopback: the orchestrator keeps the served model's embeddings
 * and head aside on every agent (`agentReserveGb`, as `serve --model` sets it), so the plan
 * never gives an end stage more weights than its memory, and each reference engine's bound is
 * its memory less the planned weights of the layers it holds, the ends included.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { ReferenceEngine } from '../../src/agent/engines/reference/reference-engine.js';
import { heldWeightBytes } from '../../src/model/config.js';
import { makeModel } from '../../src/model/make-model.js';
import { startOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { readServedModel, type ServedModel } from '../../src/orchestrator/served-model.js';
import { waitFor } from './processes.js';

const LAYERS = 4;
let dir: string;
let served: ServedModel;

beforeAll(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'hecate-kvb-')), 'tiny');
  // A vocabulary whose embeddings outweigh a layer: an end stage that ignored them would be short.
  await makeModel(dir, { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 1024, seed: 9 });
  served = await readServedModel(dir, 1);
});

afterAll(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

describe('the KV memory the plan gives an agent', () => {
  it('is its memory less its layers and ends: positive on both stages of a two-way split, and the completion runs', async () => {
    const layerGb = served.spec.layerGb ?? 1;
    expect(served.endGb * 1e9).toBeGreaterThan(layerGb * 1e9); // 2 × 1024 × 64 × 4 bytes against a layer's 124 KB
    const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]), agentReserveGb: served.endGb, stageTimeoutMs: 20_000 });
    // Two layers each, the ends kept aside, and KV room less than a third layer: the plan must split 2 + 2.
    const memoryGb = layerGb * (LAYERS / 2 + 0.6) + served.endGb;
    const engines = [0, 1].map(() => new ReferenceEngine({ models: new Map([[served.text.id, dir]]), memoryBytes: memoryGb * 1e9 }));
    const agents: RunningAgent[] = [];
    try {
      for (const [i, engine] of engines.entries()) agents.push(await startAgent({ id: `k${i}`, memoryGb, score: 1, join: orchestrator.url, engine }));
      await waitFor('a plan over 2 agents', () => (orchestrator.swarm() !== undefined ? true : undefined), 20_000, 20);
      // The plan, and the status, see each agent's memory less the ends.
      const status = (await (await fetch(`${orchestrator.url}/v1/status`)).json()) as { nodes: { id: string; memoryGb: number }[] };
      expect(status.nodes).toHaveLength(2);
      for (const a of status.nodes) expect(a.memoryGb).toBeCloseTo(memoryGb - served.endGb, 12);
      const r = await fetch(`${orchestrator.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: served.text.id, prompt: 'KV', max_tokens: 8, temperature: 0 }) });
      const body = (await r.json()) as { choices: { token_ids: number[] }[]; hecate: { path: { nodeId: string; layers: [number, number] }[] } };
      expect(r.status, JSON.stringify(body)).toBe(200);
      expect(body.choices[0]?.token_ids).toHaveLength(8);
      expect(body.hecate.path.map((h) => h.layers)).toEqual([[0, 2], [2, 4]]);
      for (const [i, hop] of body.hecate.path.entries()) {
        const engine = engines[Number(hop.nodeId.slice(1))] as ReferenceEngine;
        const planned = heldWeightBytes(served.config, 2, i === 0, i === 1);
        expect(engine.plannedWeightBytes()).toBe(planned);
        expect(engine.kvBoundBytes()).toBeCloseTo(memoryGb * 1e9 - planned, 3);
        // At least the KV room and what the ends kept aside beyond its own end: never negative.
        expect(engine.kvBoundBytes()).toBeGreaterThanOrEqual(0.6 * layerGb * 1e9 - 1);
        expect(engine.holds().sessions).toBeLessThanOrEqual(1);
      }
    } finally {
      await Promise.all(agents.map((a) => a.stop()));
      await orchestrator.close();
    }
  });
});
