/**
 * `node dist-bench/bench/openai-prefix.js [runs]`: issue 37's shared-prefix figure (W7a-like)
 * for the OpenAI door: 4 scripted engines with an LRU prefix cache (bench/scripted-engines.ts:
 * blocks of 64 characters, 96 kept, 2 ms of prefill per block not cached, 5 ms a token), 16
 * groups of 8 completions sharing a 1,024-character system prefix each, sent in a seeded shuffled
 * order by 8 clients. Through serve (the router in its own process, bench/openai-router.ts: its
 * prefix affinity) against round-robin straight to the engines; each with fresh engines. Reports
 * the engines' prefix hit rate (characters hit ÷ queried, from their `/metrics`) and throughput.
 *
 *     npm run build:bench && node dist-bench/bench/openai-prefix.js 3
 */
import { uniform } from '../src/core/random.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const runs = Number(process.argv[2] ?? 3);
const ENGINES = 4;
const GROUPS = 16;
const PER_GROUP = 8;
const CLIENTS = 8;
const CACHE = { blockChars: 64, blocks: 96, missMs: 2 };

/** The workload: each group's shared prefix and its users' questions, shuffled by `seed`. */
function prompts(seed: number): string[] {
  const rnd = uniform(seed);
  const out: string[] = [];
  for (let g = 0; g < GROUPS; g++) {
    const system = `System ${g}: ${'you are a careful assistant of group '.repeat(40)}`.slice(0, 1024);
    for (let u = 0; u < PER_GROUP; u++) out.push(`${system}\nUser ${u} of ${g}: ${'tell me about the swarm '.repeat(3)}`);
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j] as string, out[i] as string];
  }
  return out;
}

async function firstLine<T>(child: ChildProcess): Promise<T> {
  return new Promise<T>((resolve) => child.stdout?.once('data', (c: Buffer) => resolve(JSON.parse(c.toString('utf8')) as T)));
}

/** The engines' prefix counters, summed. */
async function counters(urls: readonly string[]): Promise<{ queried: number; hits: number }> {
  let queried = 0;
  let hits = 0;
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    queried += Number(/vllm:prefix_cache_queries_total\{[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
    hits += Number(/vllm:prefix_cache_hits_total\{[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
  }
  return { queried, hits };
}

/** One mode on fresh engines: hit rate and requests per second. */
async function measure(routed: boolean, seed: number): Promise<{ hitRate: number; perSecond: number }> {
  const engines = spawn(process.execPath, [fileURLToPath(new URL('./scripted-engines.js', import.meta.url)), String(ENGINES), '5', JSON.stringify(CACHE)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const urls = await firstLine<string[]>(engines);
  // 8 GB an agent: 4 of weights, 4 of the engine's KV cache, which the prefix index fills (with only
  // the weights' 4 GB it holds no block: no affinity, 0.11-0.17 hit rate, as round-robin's 0.12).
  const router = routed ? spawn(process.execPath, [fileURLToPath(new URL('./openai-router.js', import.meta.url)), urls.join(','), '8'], { stdio: ['pipe', 'pipe', 'inherit'] }) : undefined;
  const serve = router !== undefined ? await firstLine<string>(router) : undefined;
  const work = prompts(seed);
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    for (let i = next++; i < work.length; i = next++) {
      const base = serve ?? (urls[i % ENGINES] as string);
      const response = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: serve !== undefined ? 'm' : 'scripted', prompt: work[i], max_tokens: 4, stream: true }) });
      await response.text();
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  const { queried, hits } = await counters(urls);
  router?.stdin?.end();
  engines.stdin?.end();
  return { hitRate: hits / queried, perSecond: work.length / seconds };
}

const rows: Record<string, number>[] = [];
for (let run = 0; run < runs; run++) {
  const rr = await measure(false, 70 + run);
  const served = await measure(true, 70 + run);
  rows.push({ hitRateRoundRobin: +rr.hitRate.toFixed(3), hitRateServed: +served.hitRate.toFixed(3), perSecondRoundRobin: +rr.perSecond.toFixed(1), perSecondServed: +served.perSecond.toFixed(1), throughputRatio: +(served.perSecond / rr.perSecond).toFixed(3) });
  console.log(JSON.stringify(rows[rows.length - 1]));
}
const median = (k: string) => [...rows.map((r) => r[k] as number)].sort((a, b) => a - b)[Math.floor(rows.length / 2)];
console.log(JSON.stringify({ median: { hitRateRoundRobin: median('hitRateRoundRobin'), hitRateServed: median('hitRateServed'), throughputRatio: median('throughputRatio') } }));
