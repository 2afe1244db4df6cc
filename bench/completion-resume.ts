/**
 * `node dist-bench/bench/completion-resume.js [layers] [hidden] [runs]`: what a SIGKILL costs a
 * completion (docs/completions.md) — `hecate-node serve --model` and three `hecate-node agent
 * --model` processes on a make-model model, two copies (a1 holding every layer, slow by score so
 * routes take a2 → a3). A greedy 200-token completion runs `runs` times unbroken, then once with
 * a3 SIGKILLed when the orchestrator has counted about 100 steps of it: a1 takes a3's layers,
 * loading them on its first call and rebuilding its KV cache from the replayed activations.
 * Prints the unbroken runs' median, the killed run's time, the extra, the step of the kill
 * (read from `/metrics` every 5 ms), the inputs and bytes replayed, and whether the ids agree.
 * Wall-clock on a shared machine: compare within one run.
 *
 *     npm run build && npm run build:bench && node dist-bench/bench/completion-resume.js 8 512 5
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { endWeightBytes, layerBytes, readLlamaConfig } from '../src/model/config.js';
import { makeModel } from '../src/model/make-model.js';

const BIN = 'dist/src/cli/main.js';
const layers = Number(process.argv[2] ?? 8);
const hidden = Number(process.argv[3] ?? 512);
const runs = Number(process.argv[4] ?? 5);
const STEPS = 200;
const KILL_AT = 100;
const children = new Map<string, ChildProcess>();

function start(name: string, args: readonly string[], ready: RegExp): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.set(name, child);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name}: not ready after 30 s: ${out.slice(-2000)}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const m = ready.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1] ?? m[0]);
      }
    });
  });
}

async function steps(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^hecate_session_steps_total (\S+)$/m.exec(text)?.[1] ?? 0);
}

interface Answer {
  choices: { token_ids: number[] }[];
  hecate: { resumes: number; replayed_inputs: number; replayed_bytes: number; path: { nodeId: string }[] };
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'hecate-resume-'));
  try {
    const dir = join(work, 'm');
    await makeModel(dir, { layers, hidden, heads: 8, kvHeads: 4, intermediate: hidden * 3, seed: 1 });
    const config = await readLlamaConfig(dir);
    const layerGb = layerBytes(config, 4) / 1e9;
    const endGb = endWeightBytes(config, 4) / 1e9;
    const token = join(work, 'token');
    const url = await start('serve', ['serve', '--port', '0', '--model', dir, '--pipelines', '2', '--token-file', token], /listening on (http:\/\/[0-9.:]+)/);
    const agent = (id: string, share: number, score: number) => start(id, ['agent', '--id', id, '--memory', String(layerGb * (layers * share + 0.5) + endGb), '--score', String(score), '--join', url, '--port', '0', '--token-file', token, '--state-file', join(work, `${id}.json`), '--model', dir], /listening on/);
    await agent('a1', 1, 0.25);
    await agent('a2', 0.5, 4);
    await agent('a3', 0.5, 4);
    for (let i = 0; i < 300 && ((await (await fetch(`${url}/v1/status`)).json()) as { plan?: unknown }).plan == null; i++) await new Promise((r) => setTimeout(r, 100));
    const body = JSON.stringify({ model: 'm', prompt: 'Once upon a time there was a swarm', max_tokens: STEPS, temperature: 0 });
    const complete = async (): Promise<{ ms: number; answer: Answer }> => {
      const t0 = performance.now();
      const answer = (await (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).json()) as Answer;
      return { ms: performance.now() - t0, answer };
    };
    const unbroken: number[] = [];
    let reference: Answer | undefined;
    for (let i = 0; i < runs; i++) {
      const r = await complete();
      unbroken.push(r.ms);
      reference ??= r.answer;
    }
    const before = await steps(url);
    let killedAt = -1;
    const watcher = (async () => {
      for (;;) {
        const done = (await steps(url)) - before;
        if (done >= KILL_AT) {
          children.get('a3')?.kill('SIGKILL');
          killedAt = done;
          return;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const killed = await complete();
    await watcher;
    const median = [...unbroken].sort((a, b) => a - b)[Math.floor(unbroken.length / 2)] as number;
    console.log(JSON.stringify({
      model: { layers, hidden, intermediate: hidden * 3, tokens: STEPS },
      pathUnbroken: reference?.hecate.path.map((h) => h.nodeId),
      pathAfter: killed.answer.hecate.path.map((h) => h.nodeId),
      unbrokenMs: unbroken.map(Math.round),
      unbrokenMedianMs: Math.round(median),
      killedMs: Math.round(killed.ms),
      extraMs: Math.round(killed.ms - median),
      ratio: Number((killed.ms / median).toFixed(2)),
      killedAtStep: killedAt,
      resumes: killed.answer.hecate.resumes,
      replayedInputs: killed.answer.hecate.replayed_inputs,
      replayedBytes: killed.answer.hecate.replayed_bytes,
      sameIds: JSON.stringify(killed.answer.choices[0]?.token_ids) === JSON.stringify(reference?.choices[0]?.token_ids),
    }));
  } finally {
    for (const c of children.values()) c.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
