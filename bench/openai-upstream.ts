/**
 * `node dist-bench/bench/openai-upstream.js [runs] [process|apart|beside] [tokenMs] [tokens]`: issue 37's figures for the
 * OpenAI door (docs/openai.md), the orchestrator and two upstream agents in this process over
 * loopback, each agent in front of a scripted engine that paces its tokens `tokenMs` apart
 * (default 5; test/agent/upstream/scripted-upstream.ts), the engines in a child process
 * (bench/scripted-engines.ts), so no engine's CPU competes with the router's event loop. With
 * `process`, the orchestrator and its agents run in a child process of their own
 * (bench/openai-router.ts), so the clients' own work here does not share the router's
 * event loop either (in this process, every served token is handled three times on one thread:
 * client, orchestrator, agent; a direct one once); with `apart`, the orchestrator and each agent
 * in a process of its own; with `beside`, each agent in its engine's process (as deployed: an agent
 * on its engine's host) and the orchestrator in its own. `ROUTER_NODE_ARGS='--cpu-prof'`
 * profiles those. The clients, direct and served alike, read with undici's `request` and count events in
 * the bytes, so their own CPU (fetch's web streams and a TextDecoder a chunk cost about half the
 * router's) competes as little as it can with the router's on a 2-core machine:
 *
 * - added time to first token at c = 1: a streamed completion through serve against the same
 *   request straight to an engine, medians of 200 each, interleaved (target ≤ 2 ms);
 * - added p99 at c = 32: 32 clients, 8 requests each of `tokens` tokens (default 16), through serve against straight
 *   to the engines (split over them as serve would), twice each, in the order direct, served,
 *   served, direct so the machine's drift weighs on both alike, each load after one unmeasured request a
 *   client (its connections open on every hop); p99 ratio of the pooled 512 each
 *   (target ≤ 5 %; at the end, that of every run's requests pooled), and the router's CPU per served request (its processes: `process`, `apart`,
 *   `beside`); between them, the same load through a raw relay of the bytes (bench/raw-relay.ts,
 *   its own process) over one hop and over two, the floor of what any router adds on these hops;
 * - cancellation: 200 concurrent streams, half of 400 tokens aborted at seeded random points, half
 *   of 60 read to the end; how long after the last client was done every engine stream was closed
 *   (target: within 1 s; NaN: not within 5 s).
 *
 *     npm run build:bench && node dist-bench/bench/openai-upstream.js 3 process
 */
import { uniform } from '../src/core/random.js';
import { startUpstreamAgent, type RunningUpstreamAgent } from '../src/agent/upstream/upstream-agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../src/orchestrator/orchestrator.js';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseEngineLoad } from '../src/agent/upstream/engine-load.js';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';

const runs = Number(process.argv[2] ?? 3);
const routerProcess = process.argv[3] === 'process' || process.argv[3] === 'apart' || process.argv[3] === 'beside';
/** `apart`: the orchestrator and each agent in a process of its own (bench/openai-router.ts). */
const apart = process.argv[3] === 'apart';
/** `beside`: each agent in its engine's process (bench/scripted-engines.ts), the orchestrator in its own, as deployed. */
const beside = process.argv[3] === 'beside';
const tokenMs = Number(process.argv[4] ?? 5);
/** Tokens of each request of the c = 32 loads (16: serve's cost of starting one weighs most). */
const loadTokens = Number(process.argv[5] ?? 16);
/** Node options of the router's process (`ROUTER_NODE_ARGS='--cpu-prof'` profiles it). */
const routerArgs = (process.env['ROUTER_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
/** Node options of the engines' process (with `beside`, the agents' too). */
const engineArgs = (process.env['ENGINE_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] as number;

/** The clients' connections (a pool per origin, as fetch's global one). */
const clients = new Agent({ keepAliveTimeout: 30_000 });
/** Served requests a client makes to warm up (32 clients): about 3,000, the three runs it took to settle. */
const WARM_SERVED = Number(process.env['WARM_SERVED'] ?? 96);
const EVENT_END = Buffer.from('\n\n');
const DONE = Buffer.from('data: [DONE]');

/**
 * A streamed completion: ms to the first text and to the end; aborted after `abortAfter` events if
 * given. `whole`: answered 200 with every token and `[DONE]` (a failed request is not a fast one).
 */
async function stream(base: string, prompt: string, maxTokens: number, abortAfter?: number): Promise<{ ttft: number; total: number; whole: boolean }> {
  const started = performance.now();
  const controller = new AbortController();
  let ttft = -1;
  let events = 0;
  let status = 0;
  let done = false;
  try {
    const answer = await request(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', prompt, max_tokens: maxTokens, stream: true }), signal: controller.signal, dispatcher: clients });
    status = answer.statusCode;
    let lastByte = 0;
    let tail: Buffer = Buffer.alloc(0);
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      if (ttft < 0) ttft = performance.now() - started;
      if (lastByte === 0x0a && chunk[0] === 0x0a) events++; // an event's end split across two chunks
      for (let i = chunk.indexOf(EVENT_END); i >= 0; i = chunk.indexOf(EVENT_END, i + 2)) events++;
      lastByte = chunk[chunk.length - 1] ?? lastByte;
      if (!done) done = chunk.includes(DONE) || Buffer.concat([tail, chunk.subarray(0, DONE.length)]).includes(DONE); // whole, or split across two chunks
      tail = chunk.subarray(-DONE.length);
      if (abortAfter !== undefined && events >= abortAfter) {
        controller.abort();
        break;
      }
    }
  } catch {
    // aborted, or failed: not whole
  }
  return { ttft, total: performance.now() - started, whole: status === 200 && done && events >= maxTokens + 1 };
}

/** A measured request's figures; a request that was not answered whole ends the bench. */
function measured<T extends { whole: boolean }>(figures: T, where: string): T {
  if (!figures.whole) throw new Error(`a measured request to ${where} was not answered whole (200, every token, [DONE])`);
  return figures;
}

/** The lines of `stream`, one per call, in order. */
function lines(stream: NodeJS.ReadableStream): () => Promise<string> {
  const iterator = createInterface({ input: stream })[Symbol.asyncIterator]();
  return async () => {
    const next = await iterator.next();
    if (next.done === true) throw new Error('the process ended before its line');
    return next.value as string;
  };
}

/** CPU ms (user + system) so far of process `pid` and its children (the agents of `apart`). */
function cpuMs(pid: number): number {
  let ms = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fields: string[];
    try {
      fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    } catch {
      continue; // ended meanwhile
    }
    if (Number(entry) === pid || Number(fields[1]) === pid) ms += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  }
  return ms;
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, [...engineArgs, fileURLToPath(new URL('./scripted-engines.js', import.meta.url)), '2', String(tokenMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const fromEngines = lines(child.stdout);
  const urls = JSON.parse(await fromEngines()) as string[];
  const engines = urls.map((url) => ({ url, open: async () => parseEngineLoad(await (await fetch(`${url}/metrics`)).text())?.running ?? 0 }));
  const relays = Object.fromEntries(await Promise.all(([1, 2] as const).map(async (hops) => {
    const relay = spawn(process.execPath, [fileURLToPath(new URL('./raw-relay.js', import.meta.url)), urls.join(','), String(hops)], { stdio: ['pipe', 'pipe', 'inherit'] });
    return [hops, { url: JSON.parse(await lines(relay.stdout)()) as string, close: (): void => void relay.stdin.end() }] as const;
  }))) as unknown as Record<1 | 2, { url: string; close: () => void }>;
  const router = routerProcess ? spawn(process.execPath, [...routerArgs, fileURLToPath(new URL('./openai-router.js', import.meta.url)), urls.join(','), '4', ...(apart ? ['apart'] : beside ? ['beside'] : [])], { stdio: ['pipe', 'pipe', 'inherit'] }) : undefined;
  const fromRouter = router === undefined ? undefined : lines(router.stdout);
  const orchestrator = router !== undefined && fromRouter !== undefined
    ? { url: JSON.parse(await fromRouter()) as string, close: async () => void router.stdin?.end() }
    : await startOrchestrator({ models: [{ id: 'm', kind: 'base', layers: 4, pipelines: 2 }] });
  if (beside && fromRouter !== undefined) {
    child.stdin.write(`${JSON.stringify({ join: orchestrator.url })}\n`);
    await fromEngines(); // "joined"
    await fromRouter(); // "planned"
  }
  const agents: RunningUpstreamAgent[] = [];
  if (router === undefined) {
    const o = orchestrator as RunningOrchestrator;
    for (let i = 0; i < engines.length; i++) agents.push(await startUpstreamAgent({ id: `u${i}`, memoryGb: 4, score: 1, join: o.url, upstream: (engines[i] as { url: string }).url, heartbeatMs: 200 }));
    await Promise.all(agents.map((a) => a.joined));
    for (let i = 0; i < 200 && o.swarm()?.state().plan.pipelines.length !== 2; i++) await new Promise((r) => setTimeout(r, 25));
  }
  const e0 = engines[0] as { url: string };
  const table: Record<string, number>[] = [];
  // Warm every path (connections, JIT) to its steady state, unmeasured: with 24 requests a client
  // here, the router's CPU a served request still fell from 1.6 to 1.0 ms over the first three
  // runs (about 4,000 requests) and its p99 with it. A router serves for days: its steady state is
  // what clients meet.
  await Promise.all(Array.from({ length: 32 }, async (_, c) => {
    for (const base of [orchestrator.url, relays[1].url, relays[2].url, (engines[c % 2] as { url: string }).url]) for (let k = 0; k < (base === orchestrator.url ? WARM_SERVED : 16); k++) await stream(base, `warm ${c} ${k}`, 16);
  }));
  /** Every run's loads pooled: a run's p99 is the 6th longest of its 512 requests, the pooled one of all runs' (steadier). */
  const pooled = { direct: [] as number[], served: [] as number[], relay1: [] as number[], relay2: [] as number[] };
  for (let run = 0; run < runs; run++) {
    // c = 1: time to first token, interleaved so drift hits both alike.
    const direct: number[] = [];
    const served: number[] = [];
    for (let i = 0; i < 200; i++) {
      direct.push(measured(await stream(e0.url, `ttft ${i}`, 2), 'direct').ttft);
      served.push(measured(await stream(orchestrator.url, `ttft ${i}`, 2), 'served').ttft);
    }
    // c = 32: p99 of whole requests, each path twice, in mirrored order (direct, relay 1, relay 2, served, served, relay 2, relay 1, direct).
    /** Served and direct requests' time to first token under the load: where serve's p99 is spent (a burst of 32 starts). */
    const servedTtft: number[] = [];
    const directTtft: number[] = [];
    const load = async (base: (client: number) => string, ttfts?: number[]): Promise<number[]> => {
      const times: number[] = [];
      // One unmeasured request a client first, so each load starts with its connections open on every
      // hop, as under steady traffic: the previous run's aborted streams closed a hundred of serve's.
      await Promise.all(Array.from({ length: 32 }, (_, c) => stream(base(c), `prime ${c}`, 2)));
      await Promise.all(Array.from({ length: 32 }, async (_, c) => {
        for (let k = 0; k < 8; k++) {
          const figures = measured(await stream(base(c), `load ${c} ${k}`, loadTokens), base(c));
          times.push(figures.total);
          ttfts?.push(figures.ttft);
        }
      }));
      return times;
    };
    const directLoad: number[] = [];
    const servedLoad: number[] = [];
    /** The raw relays' loads: the same bytes over one hop and over two, nothing else done (bench/raw-relay.ts). */
    const relayLoad: Record<1 | 2, number[]> = { 1: [], 2: [] };
    let routerCpu = 0;
    /** The engines' process CPU under the served loads and the direct ones (with `beside`, the agents' share is the difference). */
    const enginesCpu = { served: 0, direct: 0 };
    for (const target of ['direct', 1, 2, 'served', 'served', 2, 1, 'direct'] as const) {
      const served = target === 'served';
      const before = router?.pid !== undefined ? cpuMs(router.pid) : 0;
      const enginesBefore = child.pid !== undefined ? cpuMs(child.pid) : 0;
      const times = await load(served ? () => orchestrator.url : target === 'direct' ? (c) => (engines[c % 2] as { url: string }).url : () => relays[target].url, served ? servedTtft : target === 'direct' ? directTtft : undefined);
      (served ? servedLoad : target === 'direct' ? directLoad : relayLoad[target]).push(...times);
      if (served && router?.pid !== undefined) routerCpu += cpuMs(router.pid) - before;
      if (child.pid !== undefined && (served || target === 'direct')) enginesCpu[served ? 'served' : 'direct'] += cpuMs(child.pid) - enginesBefore;
    }
    pooled.direct.push(...directLoad);
    pooled.served.push(...servedLoad);
    pooled.relay1.push(...relayLoad[1]);
    pooled.relay2.push(...relayLoad[2]);
    // Cancellation: 200 streams, every other one aborted at a random chunk.
    const rnd = uniform(37 + run);
    await Promise.all(Array.from({ length: 200 }, (_, i) => stream(orchestrator.url, `cancel ${run} ${i}`, i % 2 === 0 ? 400 : 60, i % 2 === 0 ? 2 + Math.floor(rnd() * 60) : undefined)));
    // Every client is done (its last chunk read, or aborted): how long until the engines hold no stream.
    const settled = performance.now();
    let closedMs = Number.NaN;
    while (performance.now() - settled < 5000) {
      if ((await Promise.all(engines.map((e) => e.open()))).every((n) => n === 0)) {
        closedMs = performance.now() - settled;
        break;
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    table.push({
      ttftDirectMs: +median(direct).toFixed(3),
      ttftServedMs: +median(served).toFixed(3),
      addedTtftMs: +(median(served) - median(direct)).toFixed(3),
      p99DirectMs: +quantile(directLoad, 0.99).toFixed(1),
      p99ServedMs: +quantile(servedLoad, 0.99).toFixed(1),
      addedP99Pct: +((quantile(servedLoad, 0.99) / quantile(directLoad, 0.99) - 1) * 100).toFixed(2),
      addedP99RawRelay1HopPct: +((quantile(relayLoad[1], 0.99) / quantile(directLoad, 0.99) - 1) * 100).toFixed(2),
      addedP99RawRelay2HopsPct: +((quantile(relayLoad[2], 0.99) / quantile(directLoad, 0.99) - 1) * 100).toFixed(2),
      /** Serve's p99 against the raw relay's over the same two hops: what serve's own work adds. */
      p99OverRawRelay2HopsPct: +((quantile(servedLoad, 0.99) / quantile(relayLoad[2], 0.99) - 1) * 100).toFixed(2),
      servedTtftP50Ms: +median(servedTtft).toFixed(1),
      servedTtftP99Ms: +quantile(servedTtft, 0.99).toFixed(1),
      directTtftP50Ms: +median(directTtft).toFixed(1),
      directTtftP99Ms: +quantile(directTtft, 0.99).toFixed(1),
      p50DirectMs: +median(directLoad).toFixed(1),
      p50ServedMs: +median(servedLoad).toFixed(1),
      ...(router !== undefined ? { routerCpuMsPerRequest: +(routerCpu / servedLoad.length).toFixed(2) } : {}),
      enginesCpuMsPerRequest: +(enginesCpu.direct / directLoad.length).toFixed(2),
      enginesCpuMsPerServedRequest: +(enginesCpu.served / servedLoad.length).toFixed(2),
      openAfterAllMs: +closedMs.toFixed(1),
    });
    console.log(JSON.stringify(table[table.length - 1]));
  }
  const col = (k: string) => median(table.map((r) => r[k] as number));
  const pooledPct = (xs: number[]) => +((quantile(xs, 0.99) / quantile(pooled.direct, 0.99) - 1) * 100).toFixed(2);
  console.log(JSON.stringify({ pooled: { requests: pooled.served.length, p99DirectMs: +quantile(pooled.direct, 0.99).toFixed(1), addedP99Pct: pooledPct(pooled.served), addedP99RawRelay1HopPct: pooledPct(pooled.relay1), addedP99RawRelay2HopsPct: pooledPct(pooled.relay2) } }));
  console.log(JSON.stringify({ tokens: loadTokens, router: apart ? 'orchestrator and each agent in its own process' : beside ? "orchestrator in its own process, each agent in its engine's" : routerProcess ? 'own process' : 'this process', tokenMs, median: { addedTtftMs: col('addedTtftMs'), addedP99Pct: col('addedP99Pct'), addedP99RawRelay1HopPct: col('addedP99RawRelay1HopPct'), addedP99RawRelay2HopsPct: col('addedP99RawRelay2HopsPct'), p99OverRawRelay2HopsPct: col('p99OverRawRelay2HopsPct'), enginesCpuMsPerServedRequest: col('enginesCpuMsPerServedRequest'), enginesCpuMsPerRequest: col('enginesCpuMsPerRequest'), openAfterAllMs: col('openAfterAllMs'), ...(routerProcess ? { routerCpuMsPerRequest: col('routerCpuMsPerRequest') } : {}) } }));
  await Promise.all(agents.map((a) => a.stop()));
  await orchestrator.close();
  for (const relay of Object.values(relays)) relay.close();
  child.stdin.end();
  await clients.close();
}

await main();
