/**
 * Precise mode end to end (docs/prefix-cache.md, "Precise mode"; in process, loopback): two
 * reference-engine agents report the token-id blocks their caches hold; the orchestrator asks each
 * for a snapshot, feeds its copy's index from the events, shows the copies precise on `/metrics`,
 * routes a prompt sharing those blocks with their tokens cached, heals a gap in the sequence
 * numbers with a snapshot, and re-reads a copy whose agent was replaced (a new engine, a new epoch).
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
import { tokenTensor } from '../../src/wire/tensor.js';
import { waitFor } from './processes.js';

const LAYERS = 2;
let dir: string;
let served: ServedModel;

beforeAll(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'hecate-precise-')), 'tiny');
  await makeModel(dir, { layers: LAYERS, hidden: 32, heads: 4, kvHeads: 2, intermediate: 64, seed: 7 });
  served = await readServedModel(dir, 2);
});

afterAll(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

/** Every sample of `name` on `/metrics`, by its label's value ('' when it has none). */
const series = async (url: string, name: string): Promise<Map<string, number>> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return new Map([...text.matchAll(new RegExp(`^${name}(?:\\{[a-z]+="([^"]*)"\\})? (\\S+)$`, 'gm'))].map((m) => [m[1] ?? '', Number(m[2])]));
};

describe('precise mode, serve', () => {
  it('feeds each copy from its engine\'s reports, heals a gap, and re-reads a replaced agent', async () => {
    const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]) });
    const memoryGb = (served.spec.layerGb ?? 1) * LAYERS * 4;
    const engines = new Map<string, ReferenceEngine>();
    const start = (id: string): Promise<RunningAgent> => {
      const engine = new ReferenceEngine({ models: new Map([[served.text.id, dir]]) });
      engines.set(id, engine);
      return startAgent({ id, memoryGb, score: 1, join: orchestrator.url, engine, heartbeatMs: 50, kvReportMs: 10 });
    };
    const agents = [await start('p1'), await start('p2')];
    const complete = async (prompt: number[]): Promise<void> => {
      const r = await fetch(`${orchestrator.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: served.text.id, prompt, max_tokens: 1, temperature: 0 }) });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    };
    const metric = async (name: string): Promise<Map<string, number>> => series(orchestrator.url, name);
    const precise = async (): Promise<number[]> => [...(await metric('hecate_prefix_copy_precise')).values()];
    try {
      await waitFor('both copies precise', async () => ((await precise()).join() === '1,1' ? true : undefined), 10_000, 20);
      const shared = Array.from({ length: 70 }, (_, i) => 10 + i); // two whole blocks of 32, and 6 ids
      // A completion's session is dropped when it ends: its blocks come and go, reported both times.
      await complete(shared);
      await waitFor('the completion\'s blocks reported gone', async () => ((await metric('hecate_prefix_precise_blocks')).get('') === 0 ? true : undefined), 10_000, 10);
      // A session p2's engine holds (run on it directly): its blocks are all the index learns of p2's copy.
      const span = { modelId: served.text.id, layerStart: 0, layerEnd: LAYERS, layers: LAYERS };
      await engines.get('p2')!.load(span);
      await engines.get('p2')!.step({ sessionId: 'held', span, step: 0, input: tokenTensor(shared), signal: new AbortController().signal });
      await waitFor('p2\'s blocks reported', async () => ((await metric('hecate_prefix_precise_blocks')).get('') === 2 ? true : undefined), 10_000, 10);
      const routerBefore = (await metric('hecate_cached_tokens_total')).get('router') ?? 0;
      for (let i = 0; i < 3; i++) await complete([...shared.slice(0, 64), 99, 98, i]);
      // each routed to p2's copy with its two blocks cached (and no block learnt from the routes themselves)
      expect(((await metric('hecate_cached_tokens_total')).get('router') ?? 0) - routerBefore).toBe(3 * 64);

      const post = (id: string, report: unknown) => fetch(`${orchestrator.url}/v1/nodes/${id}/kv`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(report) });
      // Another epoch heard for p1 (as from a restarted engine): its copy is wiped and estimated, a
      // snapshot asked for; p1's own next report is another epoch again, and its snapshot makes it precise.
      expect(await (await post('p1', { epoch: 'another', blockSize: 32, events: [] })).json()).toEqual({ snapshot: true });
      expect((await precise()).sort().join()).toBe('0,1');
      await waitFor('p1 re-read', async () => ((await precise()).join() === '1,1' ? true : undefined), 10_000, 10);
      expect((await metric('hecate_prefix_kv_restarts_total')).get('')).toBe(2);
      // A gap: p2's events jump past the next number (some were lost): estimated until the
      // snapshot its next report brings (the jumped event itself is never applied).
      const gap = await post('p2', { epoch: engines.get('p2')!.kvFeed.epoch, blockSize: 32, events: [{ seq: 1_000_000, kind: 'cleared' }] });
      expect(await gap.json()).toEqual({ snapshot: true });
      await waitFor('the gap healed', async () => ((await metric('hecate_prefix_gaps_healed_total')).get('') === 1 ? true : undefined), 10_000, 10);
      expect((await precise()).join()).toBe('1,1');
      expect((await metric('hecate_prefix_precise_blocks')).get('')).toBeGreaterThanOrEqual(2); // the cleared event was never applied

      // p2 replaced: it leaves (its copy wiped), a new engine joins under its id and is read anew
      await agents[1]!.stop();
      agents[1] = await start('p2');
      await waitFor('the new p2 precise', async () => ((await precise()).join() === '1,1' ? true : undefined), 10_000, 10);
    } finally {
      for (const a of agents) await a.stop().catch(() => {});
      await orchestrator.close();
    }
  });
});

