/**
 * `node dist-bench/bench/completion-resume.js [layers] [hidden] [rounds]`: what a SIGKILL costs a
 * completion (docs/completions.md) — `hecate-node serve --model` and three `hecate-node agent
 * --model` processes on a make-model model, one copy: a2 → a3 (fast by score), a1 (able to hold
 * every layer, slow by score) left out of it, holding nothing. Each round starts a fresh swarm,
 * warms it (a 32-token completion: a2 and a3 load their layers), runs a greedy 200-token completion unbroken, then the same completion with
 * a3 SIGKILLed when the orchestrator has counted about 100 of its steps (read from `/metrics`
 * every 5 ms): a1 takes a3's layers, loading them on its first call and rebuilding its KV cache
 * from the replayed activations. Unbroken and killed runs alternate on the same swarm, so a burst
 * of load on a shared machine hits both alike; the extra time is the median of the rounds' paired
 * differences. Prints the medians, each round, the inputs and bytes replayed, and whether the ids
 * agree. Wall-clock on a shared machine: compare within one run.
 *
 *     npm run bench:resume            # 8 layers of hidden 512, 5 rounds
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { endWeightBytes, layerBytes, readLlamaConfig } from '../src/model/config.js';
import { makeModel } from '../src/model/make-model.js';
import { median } from './engine-model.js';

const BIN = 'dist/src/cli/main.js';
const layers = Number(process.argv[2] ?? 8);
const hidden = Number(process.argv[3] ?? 512);
const runs = Number(process.argv[4] ?? 5);
const STEPS = 200;
const KILL_AT = 100;
const WARM = 32;
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

/** One round on a fresh swarm: its unbroken and killed runs. */
interface Round {
  readonly unbrokenMs: number;
  readonly killedMs: number;
  readonly killedAtStep: number;
  readonly answer: Answer;
  readonly reference: Answer;
}

async function round(work: string, dir: string, r: number, layerGb: number, endGb: number): Promise<Round> {
  // Its own secret, key bindings and agent keys: a fresh swarm.
  const own = join(work, `round-${r}`);
  mkdirSync(own);
  const token = join(own, 'token');
  const url = await start('serve', ['serve', '--port', '0', '--model', dir, '--pipelines', '1', '--token-file', token, '--stage-timeout-ms', '60000'], /listening on (http:\/\/[0-9.:]+)/);
  try {
    const agent = (id: string, share: number, score: number) => start(id, ['agent', '--id', id, '--memory', String(layerGb * (layers * share + 0.5) + endGb), '--score', String(score), '--join', url, '--port', '0', '--token-file', token, '--state-file', join(own, `${id}.json`), '--model', dir], /listening on/);
    await agent('a1', 1, 0.25);
    await agent('a2', 0.5, 4);
    await agent('a3', 0.5, 4);
    for (let i = 0; i < 300 && ((await (await fetch(`${url}/v1/status`)).json()) as { plan?: unknown }).plan == null; i++) await new Promise((res) => setTimeout(res, 100));
    const complete = async (maxTokens: number): Promise<{ ms: number; answer: Answer }> => {
      const t0 = performance.now();
      const body = JSON.stringify({ model: 'm', prompt: 'Once upon a time there was a swarm', max_tokens: maxTokens, temperature: 0 });
      const response = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const answer = (await response.json()) as Answer;
      if (response.status !== 200 || answer.choices?.[0]?.token_ids.length !== maxTokens) throw new Error(`round ${r + 1}: ${response.status} ${JSON.stringify(answer).slice(0, 500)}`);
      return { ms: performance.now() - t0, answer };
    };
    // Warm: a2 and a3 load their layers on their first call, and the router's reading of their
    // speed forgets that call over the next ones (with a second copy on a1 it may then route the timed runs there).
    await complete(WARM);
    const unbroken = await complete(STEPS);
    const route = unbroken.answer.hecate.path.map((h) => h.nodeId).join(' → ');
    if (route !== 'a2 → a3') throw new Error(`round ${r + 1}: the unbroken run took ${route}, not a2 → a3`);
    const before = await steps(url);
    let killedAt = -1;
    let finished = false;
    const watcher = (async () => {
      while (!finished) {
        const done = (await steps(url)) - before;
        if (done >= KILL_AT) {
          children.get('a3')?.kill('SIGKILL');
          killedAt = done;
          return;
        }
        await new Promise((res) => setTimeout(res, 5));
      }
    })();
    const killed = await complete(STEPS).finally(() => {
      finished = true;
    });
    await watcher;
    if (killedAt < 0) throw new Error(`round ${r + 1}: the completion ended before step ${KILL_AT}`);
    return { unbrokenMs: unbroken.ms, killedMs: killed.ms, killedAtStep: killedAt, answer: killed.answer, reference: unbroken.answer };
  } finally {
    for (const c of children.values()) c.kill('SIGKILL');
    children.clear();
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'hecate-resume-'));
  try {
    const dir = join(work, 'm');
    await makeModel(dir, { layers, hidden, heads: 8, kvHeads: 4, intermediate: hidden * 3, seed: 1 });
    const config = await readLlamaConfig(dir);
    const layerGb = layerBytes(config, 4) / 1e9;
    const endGb = endWeightBytes(config, 4) / 1e9;
    const uptime = (): string => execFileSync('uptime', { encoding: 'utf8' }).trim();
    const before = uptime();
    const rounds: Round[] = [];
    for (let r = 0; r < runs; r++) {
      rounds.push(await round(work, dir, r, layerGb, endGb));
      const last = rounds[rounds.length - 1] as Round;
      console.error(`round ${r + 1}/${runs}: unbroken ${Math.round(last.unbrokenMs)} ms, killed at step ${last.killedAtStep} ${Math.round(last.killedMs)} ms, ${last.answer.hecate.resumes} resume(s), replayed ${last.answer.hecate.replayed_inputs} inputs / ${last.answer.hecate.replayed_bytes} bytes, path ${last.answer.hecate.path.map((h) => h.nodeId).join(' → ')}`);
    }
    const first = rounds[0] as Round;
    const unbrokenMedian = median(rounds.map((x) => x.unbrokenMs));
    const killedMedian = median(rounds.map((x) => x.killedMs));
    console.log(JSON.stringify({
      model: { layers, hidden, intermediate: hidden * 3, tokens: STEPS, layerMB: Number((layerGb * 1000).toFixed(2)) },
      uptimeBefore: before,
      uptimeAfter: uptime(),
      pathUnbroken: first.reference.hecate.path.map((h) => h.nodeId),
      pathAfter: first.answer.hecate.path.map((h) => h.nodeId),
      unbrokenMs: rounds.map((x) => Math.round(x.unbrokenMs)),
      killedMs: rounds.map((x) => Math.round(x.killedMs)),
      killedAtStep: rounds.map((x) => x.killedAtStep),
      unbrokenMedianMs: Math.round(unbrokenMedian),
      killedMedianMs: Math.round(killedMedian),
      extraMedianMs: Math.round(median(rounds.map((x) => x.killedMs - x.unbrokenMs))),
      ratioMedian: Number(median(rounds.map((x) => x.killedMs / x.unbrokenMs)).toFixed(2)),
      resumes: rounds.map((x) => x.answer.hecate.resumes),
      replayedInputs: rounds.map((x) => x.answer.hecate.replayed_inputs),
      replayedBytes: rounds.map((x) => x.answer.hecate.replayed_bytes),
      sameIds: rounds.every((x) => JSON.stringify(x.answer.choices[0]?.token_ids) === JSON.stringify(first.reference.choices[0]?.token_ids) && JSON.stringify(x.reference.choices[0]?.token_ids) === JSON.stringify(first.reference.choices[0]?.token_ids)),
    }));
  } finally {
    for (const c of children.values()) c.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
