/**
 * An idempotent completion with real processes (docs/serve.md, "Idempotent generation"): `serve
 * --model DIR --checkpoint-every 4` and two `agent --model DIR` splitting a make-model model. A
 * greedy completion streamed under an `Idempotency-Key` loses its client mid-generation (the
 * connection dropped): its token ids so far are checkpointed and the key let go. The retry with
 * the same key resumes from them — a new session whose stages rebuild their KV caches by replaying
 * the checkpointed tokens — running only the steps left, and answers the token ids and the
 * bit-identical last logits of an unbroken single-agent run; a retry after that gets the stored
 * answer, running nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetrics, stopAll } from './processes.js';
import { singleAgentRun, startModelSwarm, streamCompletion, tinyModel } from './completion-processes.js';

const STEPS = 160;
const PROMPT = [1, 5, 9, 33, 120, 64, 8];
let work: string;
let dir: string;
let url: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hecate-idem-tokens-'));
  const model = await tinyModel(work, 3);
  dir = model.dir;
  ({ url } = await startModelSwarm(work, model, { pipelines: 1, agents: { b1: { layers: 3, score: 1 }, b2: { layers: 3, score: 1 } }, extra: ['--checkpoint-every', '4', '--verify-sample', '0'] }));
}, 60_000);

afterAll(async () => {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const steps = async (): Promise<number> => parseMetrics(await (await fetch(`${url}/metrics`)).text()).get('hecate_session_steps_total') ?? 0;

describe('an idempotent completion whose client drops mid-generation', () => {
  it('resumes on retry from the checkpointed tokens, with the unbroken run\'s ids and last logits', async () => {
    const unbroken = await singleAgentRun(dir, PROMPT, STEPS);
    expect(unbroken.ids).toHaveLength(STEPS); // no end-of-sequence token: the drop lands mid-generation
    const request = { model: 'tiny', prompt: PROMPT, max_tokens: STEPS, temperature: 0, hecate_return_logits: true };
    const headers = { 'idempotency-key': 'drop-1' };
    const dropped = await streamCompletion(url, request, { headers, stopAfter: 8 });
    expect(dropped.done).toBe(false);

    // The retry, as a client would: waiting out Retry-After while the dropped run lets the key go.
    let answer: { status: number; body: any } | undefined;
    let before = 0;
    for (let i = 0; i < 50; i++) {
      before = await steps();
      const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(request) });
      answer = { status: r.status, body: await r.json() };
      if (r.status !== 409) break;
      await sleep(Math.min(1000, Number(r.headers.get('retry-after') ?? 1) * 1000));
    }
    expect(answer?.status, JSON.stringify(answer?.body)).toBe(200);
    const body = answer?.body;
    const resumedFrom = body.hecate.resumed_from as number;
    expect(resumedFrom).toBeGreaterThan(0);
    expect(resumedFrom).toBeLessThan(STEPS);
    expect(body.choices[0].token_ids).toEqual(unbroken.ids);
    expect(body.hecate.last_logits_f32).toBe(unbroken.lastLogits);
    expect(body.choices[0].text.startsWith(dropped.text)).toBe(true); // the text the client had, then the rest
    expect(body.hecate.replayed_inputs).toBeGreaterThanOrEqual(resumedFrom); // the checkpointed tokens replayed into the new session
    expect((await steps()) - before).toBe(STEPS - resumedFrom); // only the steps the checkpoint did not hold

    // Once finished, the key answers its stored result, streamed or whole, running nothing.
    const ran = await steps();
    const again = (await (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(request) })).json()) as any;
    expect([again.choices, again.hecate, again.usage]).toEqual([body.choices, body.hecate, body.usage]);
    const streamedAgain = await streamCompletion(url, request, { headers });
    expect(streamedAgain.text).toBe(body.choices[0].text);
    expect(streamedAgain.last.choices[0].token_ids).toEqual(unbroken.ids);
    expect(streamedAgain.last.hecate.last_logits_f32).toBe(unbroken.lastLogits);
    expect(await steps()).toBe(ran);
    // The same key for another request is refused.
    const reused = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ ...request, max_tokens: STEPS - 1 }) });
    expect(reused.status).toBe(409);
    console.log(`idempotent completion: client dropped after ${dropped.chunks} chunks; the retry resumed from token ${resumedFrom} of ${STEPS} (${body.hecate.replayed_inputs} inputs / ${body.hecate.replayed_bytes} bytes replayed), ids and last logits = the single-agent run's`);
  }, 60_000);
});
