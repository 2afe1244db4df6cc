/**
 * Verification of real tokens with real processes (docs/security.md, "Verification"): `serve
 * --model DIR --verify-sample 1` and three `agent --model DIR` on a make-model model, two copies
 * (a1 holding every layer; a2 → a3 splitting it, the route). Every stage call of a greedy
 * completion is run again on the other copy (a1, over the same span, its KV cache rebuilt from the
 * inputs the call's stage saw before) and compared bit for bit: every verdict `agreed`, nobody
 * quarantined, the token ids and last logits those of an unbroken single-agent run, and no
 * session (no KV cache) left on any agent, the checks' own included.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetrics, stopAll, waitFor } from './processes.js';
import { singleAgentRun, startModelSwarm, streamCompletion, tinyModel } from './completion-processes.js';

const STEPS = 24;
const PROMPT = [1, 17, 42, 99, 7, 200];
let work: string;
let dir: string;
let url: string;
let operatorToken: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hecate-verify-tokens-'));
  const model = await tinyModel(work, 5);
  dir = model.dir;
  ({ url, operatorToken } = await startModelSwarm(work, model, {
    pipelines: 2,
    agents: { a1: { layers: 6, score: 0.25, room: 2.5 }, a2: { layers: 3, score: 4 }, a3: { layers: 3, score: 4 } },
    extra: ['--verify-sample', '1'],
  }));
}, 60_000);

afterAll(async () => {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
});

describe('a completion with every stage call verified on another copy', () => {
  it('agrees bit for bit on every call and answers the unbroken single-agent run\'s ids and last logits', async () => {
    const unbroken = await singleAgentRun(dir, PROMPT, STEPS);
    const request = { model: 'tiny', prompt: PROMPT, max_tokens: STEPS, temperature: 0, hecate_return_logits: true };
    const whole = (await (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) })).json()) as any;
    expect(whole.hecate.path.map((h: { nodeId: string }) => h.nodeId)).toEqual(['a2', 'a3']); // a1 only checks
    expect(whole.choices[0].token_ids).toEqual(unbroken.ids);
    expect(whole.hecate.last_logits_f32).toBe(unbroken.lastLogits);
    const streamed = await streamCompletion(url, request);
    expect(streamed.done).toBe(true);
    expect(streamed.last.choices[0].token_ids).toEqual(unbroken.ids);
    expect(streamed.last.hecate.last_logits_f32).toBe(unbroken.lastLogits);
    expect(streamed.text).toBe(whole.choices[0].text);

    const metrics = parseMetrics(await (await fetch(`${url}/metrics`)).text());
    const verdict = (v: string) => metrics.get(`hecate_verifications_total{verdict="${v}"}`) ?? 0;
    const calls = 2 * 2 * unbroken.ids.length; // two completions, two stages a step
    expect(verdict('agreed')).toBe(calls);
    expect([verdict('quarantined'), verdict('inconclusive'), verdict('skipped')]).toEqual([0, 0, 0]);
    // Agents' URLs are the operator's view.
    const statuses = (await (await fetch(`${url}/v1/status`, { headers: { authorization: `Bearer ${operatorToken}` } })).json()) as { nodes: { id: string; state: string; url: string }[] };
    expect(statuses.nodes.map((n) => n.state)).toEqual(['alive', 'alive', 'alive']);
    // Every session, the checks' own (`<id>~v<n>`) included, was dropped on the agents: no KV cache left.
    await waitFor('no session left on any agent', async () => {
      const held = await Promise.all(statuses.nodes.map(async (n) => (await (await fetch(`${n.url}/v1/health`)).json()) as { sessions: number; kvBytes: number }));
      return held.every((h) => h.sessions === 0 && h.kvBytes === 0) ? true : undefined;
    }, 10_000);
    console.log(`verified completion: ${calls} stage calls re-run on a1 (${metrics.get('hecate_stage_calls_total{node="a1",outcome="ok"}') ?? 0} calls answered by a1), all agreed; ids and last logits = the single-agent run's`);
  }, 60_000);
});
