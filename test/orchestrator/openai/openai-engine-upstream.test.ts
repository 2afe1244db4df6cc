/**
 * A swarm behind another swarm's agents, with real processes (docs/openai.md, "The reference
 * engine as an upstream"): three `hecate-node agent --model DIR --openai` running a make-model
 * model whole, three `agent --upstream` fronting them, `serve` in front. A greedy stream whose
 * engine is SIGKILLed midway completes on another copy with exactly the unkilled run's text: the
 * continuation resumes from the token ids streamed so far (the model's random bytes are not valid
 * UTF-8, so a continuation from the re-tokenized text would differ), for a completion and a chat.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeModel } from '../../../src/model/make-model.js';
import { startCli, stopAll, waitFor, type Child } from '../processes.js';

const work = mkdtempSync(join(tmpdir(), 'hecate-engine-upstream-'));
const tokenFile = join(work, 'swarm-token');
const engines: { child: Child; url: string }[] = [];
let url: string;

beforeAll(async () => {
  const dir = join(work, 'tiny');
  await makeModel(dir, { layers: 6, hidden: 64, heads: 4, kvHeads: 2, intermediate: 160, seed: 3 });
  const started = await Promise.all([
    startCli('serve', ['serve', '--port', '0', '--layers', '4', '--pipelines', '3', '--token-file', tokenFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/),
    ...[0, 1, 2].map((i) => startCli(`u${i}`, ['agent', '--id', `u${i}`, '--model', dir, '--openai', '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true })),
  ]);
  url = (started[0] as { match: string }).match;
  for (const s of started.slice(1)) engines.push({ child: s.child, url: s.match });
  await Promise.all(engines.map((e, i) => startCli(`e${i}`, ['agent', '--id', `e${i}`, '--memory', '4', '--score', '1', '--join', url, '--port', '0', '--token-file', tokenFile, '--upstream', `${e.url}/v1`], /listening on (http:\/\/\S+?),/)));
  await waitFor('the swarm planned over the three upstream agents', async () => {
    const s = (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { state: string }[] };
    return s.status === 'healthy' && s.nodes.length === 3 && s.nodes.every((n) => n.state === 'alive') ? true : undefined;
  }, 30_000);
}, 60_000);

afterAll(async () => {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
});

/** An engine's `GET /health`: generations running and started. */
async function health(engine: { url: string }): Promise<{ running: number; requests: number } | undefined> {
  try {
    return (await (await fetch(`${engine.url}/health`)).json()) as { running: number; requests: number };
  } catch {
    return undefined; // killed
  }
}

/** Streams `body` to `path` through serve; `onPiece` is told the count of text pieces so far. */
async function stream(path: string, body: Record<string, unknown>, onPiece: (n: number) => Promise<void> | void = () => {}): Promise<{ text: string; finish: string | undefined; usage: { completion_tokens: number } | undefined; done: boolean }> {
  const response = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }) });
  expect(response.status).toBe(200);
  const decoder = new TextDecoder();
  let buffer = '';
  let text = '';
  let pieces = 0;
  let finish: string | undefined;
  let usage: { completion_tokens: number } | undefined;
  let done = false;
  for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const data = buffer.slice(0, end).replace(/^data: /, '');
      buffer = buffer.slice(end + 2);
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const chunk = JSON.parse(data) as { error?: unknown; choices: { text?: string; delta?: { content?: string }; finish_reason: string | null }[]; usage?: { completion_tokens: number } };
      expect(chunk.error).toBeUndefined();
      const choice = chunk.choices[0];
      const piece = choice?.text ?? choice?.delta?.content ?? '';
      if (choice?.finish_reason != null) finish = choice.finish_reason;
      if (chunk.usage != null) usage = chunk.usage;
      if (piece !== '') {
        text += piece;
        await onPiece(++pieces);
      }
    }
  }
  return { text, finish, usage, done };
}

/** Streams `body` whole, then again with the engine serving it SIGKILLed at the 5th piece: the same text. */
async function killMidway(path: string, body: Record<string, unknown>): Promise<void> {
  const unkilled = await stream(path, body);
  expect(unkilled.done).toBe(true);
  expect(unkilled.usage?.completion_tokens).toBe(body['max_tokens']);
  const before = await Promise.all(engines.map(health));
  let victim = -1;
  const run = await stream(path, body, async (n) => {
    if (n !== 5) return;
    const now = await Promise.all(engines.map(health));
    victim = now.findIndex((h) => h?.running === 1);
    engines[victim]?.child.process.kill('SIGKILL');
  });
  expect(victim).toBeGreaterThanOrEqual(0);
  expect(await engines[victim]?.child.exited).toBe('SIGKILL');
  expect(run.done).toBe(true);
  expect(run.text).toBe(unkilled.text);
  expect(run.finish).toBe('length');
  expect(run.usage?.completion_tokens).toBe(body['max_tokens']);
  // Another engine took the rest: one more generation on the live ones than before.
  const after = await Promise.all(engines.map(health));
  const started = (hs: typeof before) => hs.reduce((n, h, i) => n + (i === victim || (engines[i]?.child.process as ChildProcess | undefined)?.exitCode !== null || h === undefined ? 0 : h.requests), 0);
  expect(started(after) - started(before)).toBe(1);
  engines.splice(victim, 1);
}

describe('the reference engine as an upstream, with real processes', () => {
  it('continues a greedy completion whose engine is SIGKILLed midway from the token ids: the unkilled text', async () => {
    await killMidway('/v1/completions', { model: 'base', prompt: 'Once upon a time', max_tokens: 300, temperature: 0 });
  }, 60_000);

  it('continues a greedy chat the same way, as a completion of its prompt ids and the ids streamed', async () => {
    await killMidway('/v1/chat/completions', { model: 'base', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me a story.' }], max_tokens: 300, temperature: 0 });
  }, 60_000);
});
