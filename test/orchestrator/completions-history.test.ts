/**
 * The replay history of a completion, bounded in bytes (in process, loopback): the route runs on
 * a split copy (a2 → a3, fast) beside a whole one (a1, slow); a3 leaves mid-generation, so its
 * layers resume on a1. Unbounded, a1 is rebuilt from the boundary activations the session kept;
 * with a bound of 1 byte those are dropped every step and the resume recomputes every stage from
 * the token ids. Both give the unbroken run's ids and bit-identical last logits; `/metrics` shows
 * the history's bytes and bound.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { ReferenceEngine } from '../../src/agent/engines/reference/reference-engine.js';
import { makeModel } from '../../src/model/make-model.js';
import { startOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { readServedModel, type ServedModel } from '../../src/orchestrator/served-model.js';
import { waitFor } from './processes.js';
import { streamCompletion } from './completion-processes.js';

const LAYERS = 6;
let dir: string;
let served: ServedModel;

beforeAll(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'hecate-hist-')), 'tiny');
  await makeModel(dir, { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 160, seed: 11 });
  served = await readServedModel(dir, 2);
});

afterAll(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

const REQUEST = { prompt: 'A bounded history', max_tokens: 40, temperature: 0, hecate_return_logits: true };

/** One run: a fresh orchestrator and agents; `leaveAt` chunks into the stream, a3 leaves. */
async function run(maxHistoryBytes: number | undefined, leaveAt: number | undefined): Promise<{ body: any; metrics: string }> {
  const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]), stageTimeoutMs: 20_000, ...(maxHistoryBytes !== undefined ? { maxHistoryBytes } : {}) });
  const layerGb = served.spec.layerGb ?? 1;
  const agents = new Map<string, RunningAgent>();
  const engine = () => new ReferenceEngine({ models: new Map([[served.text.id, dir]]) });
  try {
    agents.set('a1', await startAgent({ id: 'a1', memoryGb: layerGb * LAYERS * 1.01, score: 0.25, join: orchestrator.url, engine: engine() }));
    for (const id of ['a2', 'a3']) agents.set(id, await startAgent({ id, memoryGb: layerGb * (LAYERS / 2) * 1.01, score: 4, join: orchestrator.url, engine: engine() }));
    await waitFor('the plan', () => (orchestrator.swarm() !== undefined ? true : undefined), 20_000, 20);
    let metrics = '';
    const { last } = await streamCompletion(orchestrator.url, { ...REQUEST, model: served.text.id }, {
      onChunk: async (n) => {
        if (n !== leaveAt) return;
        metrics = await (await fetch(`${orchestrator.url}/metrics`)).text(); // mid-generation: its history is held
        await agents.get('a3')?.stop();
      },
    });
    return { body: last, metrics: metrics === '' ? await (await fetch(`${orchestrator.url}/metrics`)).text() : metrics };
  } finally {
    await Promise.all([...agents.values()].map((a) => a.stop().catch(() => {})));
    await orchestrator.close();
  }
}

const metric = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

describe('a completion\'s replay history, bounded in bytes', () => {
  let unbroken: any;

  it('runs unbroken on the split copy', async () => {
    const r = await run(undefined, undefined);
    unbroken = r.body;
    expect(unbroken.hecate.path.map((h: { nodeId: string }) => h.nodeId)).toEqual(['a2', 'a3']);
    expect(unbroken.hecate.resumes).toBe(0);
    expect(metric(r.metrics, 'hecate_replay_history_bound_bytes')).toBe(64 * 1024 * 1024);
  });

  it('resumes from the kept boundary activations: the same ids and last logits', async () => {
    const r = await run(undefined, 10);
    expect(r.body.choices[0].token_ids).toEqual(unbroken.choices[0].token_ids);
    expect(r.body.hecate.last_logits_f32).toBe(unbroken.hecate.last_logits_f32);
    expect(r.body.hecate.path).toEqual([{ nodeId: 'a2', layers: [0, 3] }, { nodeId: 'a1', layers: [3, 6] }]);
    expect(metric(r.metrics, 'hecate_replay_history_bytes')).toBeGreaterThan(0);
    // Only a1 was rebuilt, from the activations at layer 3: [prompt tokens, 64] f32, then [1, 64] per step.
    expect(r.body.hecate.replayed_bytes % (64 * 4)).toBe(0);
  });

  it('past the bound, recomputes every stage from the token ids: the same ids and last logits', async () => {
    const r = await run(1, 10);
    expect(r.body.choices[0].token_ids).toEqual(unbroken.choices[0].token_ids);
    expect(r.body.hecate.last_logits_f32).toBe(unbroken.hecate.last_logits_f32);
    expect(r.body.hecate.resumes).toBeGreaterThanOrEqual(1);
    expect(metric(r.metrics, 'hecate_replay_history_bytes')).toBe(0);
    expect(metric(r.metrics, 'hecate_replay_history_bound_bytes')).toBe(1);
    // a2 replayed the token ids (4 bytes each) and a1 the activations a2 recomputed.
    expect(r.body.hecate.replayed_bytes % (64 * 4)).not.toBe(0);
  });
});
