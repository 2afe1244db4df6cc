/**
 * Real tokens through a rebalance (docs/rebalance.md "Replicas, serve and agents"): `serve
 * --model DIR --rebalance` and reference-engine agents on a make-model model, two copies: a fast
 * agent holding a third of the model with a slower one, and a slow one alone. A fast agent that
 * holds two thirds joins as a spare, and the automatic policy re-forms the first copy over the two
 * fast ones (the other copy serves meanwhile) while greedy completions run: the agents read their
 * spans' weights when told (`POST /v1/spans/load`), the new copy serves once loaded, and every
 * completion — before, during and after the move — gives the token ids of the quiet run.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeModel } from '../../src/model/make-model.js';
import { endWeightBytes, layerBytes, readLlamaConfig } from '../../src/model/config.js';
import { cleanUpAfterAll, collectEvents, startCli, waitFor, type Child, type ReceivedEvent } from './processes.js';

const LAYERS = 6;
const STEPS = 24;
const work = mkdtempSync(join(tmpdir(), 'hecate-rebalance-tokens-'));
const dir = join(work, 'tiny');
const token = join(work, 'swarm-token');
const sse = new AbortController();
cleanUpAfterAll(work, sse);
let url: string;
let layerGb = 0;
let endGb = 0;
let serve: { child: Child; match: string };
const events: ReceivedEvent[] = [];
const agents = new Map<string, Child>();

/** Starts an agent whose memory is its layers, some KV room and the ends the plan keeps aside on every agent. */
async function startAgent(id: string, layers: number, score: string): Promise<void> {
  const { child } = await startCli(id, ['agent', '--id', id, '--memory', String(layerGb * (layers + 0.9) + endGb), '--score', score, '--join', url, '--port', '0', '--token-file', token, '--state-file', join(work, `${id}.json`), '--model', dir], /listening on (http:\/\/[0-9.]+:\d+)/);
  agents.set(id, child);
}

beforeAll(async () => {
  await makeModel(dir, { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 160, seed: 5 });
  const config = await readLlamaConfig(dir);
  layerGb = layerBytes(config) / 1e9;
  endGb = endWeightBytes(config) / 1e9;
  serve = await startCli('serve', ['serve', '--model', dir, '--pipelines', '2', '--port', '0', '--token-file', token, '--rebalance', '--rebalance-every-ms', '500'], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  url = serve.match;
  await collectEvents(`${url}/v1/events`, events, sse.signal);
  // Two copies once all three joined: a (fast, a third of the model) with other, and slow alone.
  for (const [id, layers, score] of [['slow', LAYERS, '0.25'], ['a', 2, '4'], ['other', LAYERS, '1']] as const) await startAgent(id, layers, score);
  await waitFor('the plan over the three agents', async () => ((await (await fetch(`${url}/v1/status`)).json()) as { status?: string }).status === 'healthy' || undefined, 30_000);
}, 60_000);

const complete = async (prompt: string): Promise<{ ids: number[]; path: string[] }> => {
  const answer = (await (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt, max_tokens: STEPS, temperature: 0 }) })).json()) as { choices?: { token_ids: number[] }[]; hecate?: { path: { nodeId: string }[] }; error?: unknown };
  if (answer.choices === undefined) throw new Error(`completion failed: ${JSON.stringify(answer.error)}; events: ${events.map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 400)}`).join('\n')}; serve: ${serve.child.stderr().slice(-2000)}`);
  return { ids: answer.choices[0]?.token_ids ?? [], path: answer.hecate?.path.map((h) => h.nodeId) ?? [] };
};

describe('a completion across a rebalance (reference engine)', () => {
  it('gives the quiet run\'s token ids before, during and after a move that loads real weights', async () => {
    const prompts = ['Once upon a time', 'The swarm', 'In a hole in the ground'];
    const quiet = await Promise.all(prompts.map(complete));
    for (const q of quiet) expect(q.path).not.toContain('fast');

    // Completions run while the fast agent joins and the policy moves the copy.
    let stop = false;
    const runs: { prompt: number; ids: number[]; path: string[] }[] = [];
    const load = (async () => {
      for (let i = 0; !stop; i++) runs.push({ prompt: i % prompts.length, ...(await complete(prompts[i % prompts.length] as string)) });
    })();
    await startAgent('fast', 4, '4');
    const done = await waitFor('the move to finish', () => events.find((e) => e.type === 'move.done'), 30_000);
    const formed = events.find((e) => e.type === 'copy.formed');
    stop = true;
    await load;
    const after = await Promise.all(prompts.map(complete));

    expect(formed, 'the new copy formed before the move finished').toBeDefined();
    expect(events.filter((e) => e.type === 'move.aborted')).toEqual([]);
    expect(runs.length).toBeGreaterThan(0);
    for (const r of runs) expect(r.ids, `a completion during the move (${r.path.join('+')})`).toEqual(quiet[r.prompt]?.ids);
    after.forEach((a, i) => expect(a.ids).toEqual(quiet[i]?.ids));
    expect([...runs, ...after].some((r) => r.path.includes('fast')), 'the re-formed copy served').toBe(true);
    const loads = [...(agents.get('fast')?.stderr() ?? '').matchAll(/loaded tiny \[(\d+), (\d+)\) for a rebalance in (\d+) ms/g)];
    expect(loads.length, 'the fast agent read its span when told').toBeGreaterThan(0);
    console.log(`rebalance with the reference engine: ${runs.length} completions during the move and ${after.length} after, every one the quiet run's ${STEPS} token ids; the fast agent read ${loads.map(([, a, b, ms]) => `[${a}, ${b}) in ${ms} ms`).join(', ')}; paths after: ${after.map((a) => a.path.join(' → ')).join(', ')}; move done ${String(done.data['moveId'])}`);
  }, 90_000);
});
