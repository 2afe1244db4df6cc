/**
 * Real tokens through real processes: `serve --model DIR` and three `agent --model DIR` on a
 * make-model model, two copies (a1 holding every layer; a2 → a3 splitting it, the route). A
 * greedy completion streamed while a3 is SIGKILLed mid-generation gives the token ids and the last
 * logits of the unbroken run: a1 took layers [3, 6), its KV cache rebuilt by replaying the
 * boundary activations the session kept at layer 3.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll, type Child } from './processes.js';
import { startModelSwarm, streamCompletion, tinyModel } from './completion-processes.js';

const STEPS = 120;
let work: string;
let url: string;
let agents: Map<string, Child>;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hecate-kill-'));
  const model = await tinyModel(work, 3);
  // a1 holds every layer (one copy), a2 and a3 half each (the other, faster by score: the route);
  // a1's KV room holds a3's layers' caches too, after the kill.
  ({ url, agents } = await startModelSwarm(work, model, { pipelines: 2, agents: { a1: { layers: 6, score: 0.25, room: 2.5 }, a2: { layers: 3, score: 4 }, a3: { layers: 3, score: 4 } }, agentProcesses: true }));
}, 60_000);

afterAll(async () => {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
});

const REQUEST = { model: 'tiny', prompt: 'Once upon a time', max_tokens: STEPS, temperature: 0, hecate_return_logits: true };

describe('a completion across a SIGKILL', () => {
  it('gives the unbroken run\'s token ids and bit-identical last logits after the route\'s last agent is killed mid-generation', async () => {
    const unbroken = await (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(REQUEST) })).json() as any;
    expect(unbroken.choices[0].token_ids).toHaveLength(STEPS);
    expect(unbroken.hecate.resumes).toBe(0);
    const path = unbroken.hecate.path as { nodeId: string }[];
    expect(path.map((h) => h.nodeId)).toEqual(['a2', 'a3']);
    const victim = 'a3';
    const started = Date.now();
    let killedAt = 0;
    const run = await streamCompletion(url, REQUEST, {
      onChunk: (n) => {
        if (n === 5 && killedAt === 0) {
          killedAt = n;
          agents.get(victim)?.process.kill('SIGKILL');
        }
      },
    });
    expect(killedAt).toBe(5);
    expect(run.done).toBe(true);
    expect(run.last.error).toBeUndefined();
    expect(run.last.choices[0].finish_reason).toBe('length');
    expect(run.last.choices[0].token_ids).toEqual(unbroken.choices[0].token_ids);
    expect(run.last.hecate.last_logits_f32).toBe(unbroken.hecate.last_logits_f32);
    expect(run.last.hecate.resumes).toBeGreaterThanOrEqual(1);
    expect(run.last.hecate.replayed_inputs).toBeGreaterThan(0);
    // a1 took a3's layers, its KV cache rebuilt from the activations the session kept at layer 3.
    expect(run.last.hecate.path).toEqual([{ nodeId: 'a2', layers: [0, 3] }, { nodeId: 'a1', layers: [3, 6] }]);
    expect(run.last.hecate.replayed_bytes % (64 * 4)).toBe(0);
    // For the report: what the resume replayed and cost.
    console.log(`sigkill: victim ${victim}, path after ${JSON.stringify(run.last.hecate.path)}, replayed ${run.last.hecate.replayed_inputs} inputs / ${run.last.hecate.replayed_bytes} bytes, ${Date.now() - started} ms`);
  }, 60_000);
});
