/**
 * `node dist-bench/bench/serve-w5.js`: W5 (docs/performance.md: Poisson at ρ = 0.7 spread at random over
 * independent routers) with real processes — a nats-server, `hecate-node serve --nats` replicas
 * as separate processes, 6 `hecate-node agent --slots 1` (one stage call at a time, later ones
 * queue) in three copies of speeds 3 : 2 : 1. Each replica routes on its own latency EWMAs
 * and on the reservations in flight: its own, plus the others' as announced on the shared load
 * channel (docs/replication.md, "Shared load"); membership is shared through the log. The same
 * seeded arrivals (one-step generations of 1–7 tokens) go through 1 replica and through 2 and 4,
 * and the run prints p50 / p99 / p99.9 and each copy's traffic share against its capacity share,
 * then, over the seeds, each variant's p99 against one replica's on the same arrivals (median of
 * the per-seed ratios). Wall-clock times on a shared machine: a measurement of this run, not a
 * simulation. Needs the build (`npm run build`) and nats-server. A variant `4b` runs 4 replicas
 * of another build's CLI, `W5_BASE_BIN` (e.g. one without the shared load), in the same
 * sequence, for a before/after on the same machine state. `W5_PER_LAYER_MS` (8) sets the agents'
 * pace: slower agents make scheduling delays on a busy machine a smaller part of each latency.
 *
 *     npm run build && npm run build:bench && W5_SEEDS=1,2,3,4,5 node dist-bench/bench/serve-w5.js [requests] [replicas...]
 *     W5_BASE_BIN=../before/dist/src/cli/main.js node dist-bench/bench/serve-w5.js 1200 1 2 4 2b 4b
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRng, deriveSeed } from '../src/sim/load/rng.js';

const BIN = process.env['W5_BIN'] ?? 'dist/src/cli/main.js';
const LAYERS = 12;
const PER_LAYER_MS = Number(process.env['W5_PER_LAYER_MS'] ?? 8);
const RHO = 0.7;
const SEEDS = (process.env['W5_SEEDS'] ?? process.env['W5_SEED'] ?? '5').split(',').map(Number);
const AGENTS = [3, 3, 2, 2, 1, 1].map((score, i) => ({ id: `w${i + 1}`, memoryGb: 6, score }));
const requests = Number(process.argv[2] ?? 1200);
const variants = process.argv.length > 3 ? process.argv.slice(3) : ['1', '2', '4'];
const BASE_BIN = process.env['W5_BASE_BIN'];

const children = new Set<ChildProcess>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Spawns a process and resolves with the first capture of `ready` in its stdout (or stderr). */
function start(bin: string, args: readonly string[], ready: RegExp): Promise<{ child: ChildProcess; match: string }> {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')}: not ready after 30 s: ${out.slice(-2000)}`)), 30_000);
    const on = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const m = ready.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve({ child, match: m[1] ?? m[0] });
      }
    };
    child.stdout?.on('data', on);
    child.stderr?.on('data', on);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}): ${out.slice(-2000)}`)));
  });
}

async function stopAll(): Promise<void> {
  const all = [...children];
  for (const c of all) c.kill('SIGKILL');
  await Promise.all(all.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(undefined) : c.once('exit', r)))));
}

interface Status {
  readonly nodes: readonly { readonly id: string; readonly state: string }[];
  readonly plan: { readonly pipelines: readonly { readonly id: string; readonly stages: readonly { readonly nodeId: string; readonly layerStart: number; readonly layerEnd: number }[] }[] };
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
}

function quantile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(Math.max(Math.ceil(p * sorted.length), 1), sorted.length) - 1] ?? 0;
}

/** One run: `replicas` orchestrators on a fresh swarm, the agents, the arrivals; the figures. */
async function run(nats: string, topology: string, variant: string, seed: number): Promise<{ row: string; p99: number }> {
  const replicas = Number.parseInt(variant, 10);
  const base = variant.endsWith('b');
  if (base && BASE_BIN === undefined) throw new Error(`variant ${variant} needs W5_BASE_BIN`);
  const bin = base ? (BASE_BIN as string) : BIN;
  const swarm = `w5r${variant}s${seed}p${process.pid}`;
  // The swarm secret beside the topology (the first serve creates it), not in the working directory.
  const token = ['--token-file', join(dirname(topology), `swarm-token-${variant}`)];
  const urls = await Promise.all(Array.from({ length: replicas }, () => start(process.execPath, [bin, 'serve', '--port', '0', '--topology', topology, '--nats', nats, '--swarm', swarm, ...token], /listening on (http:\/\/\S+)/).then((s) => s.match)));
  await Promise.all(AGENTS.map((a, i) => start(process.execPath, [bin, 'agent', '--id', a.id, '--memory', String(a.memoryGb), '--score', String(a.score), '--per-layer-ms', String(PER_LAYER_MS), '--slots', '1', '--port', '0', '--join', urls.slice(i % replicas).concat(urls.slice(0, i % replicas)).join(','), ...token], /listening on (http:\/\/\S+)/)));
  let status: Status | undefined;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(200)) {
    const all = await Promise.all(urls.map(async (u) => (await fetch(`${u}/v1/status`)).json() as Promise<Status>));
    if (all.every((s) => s.nodes.every((n) => n.state === 'alive'))) {
      status = all[0];
      break;
    }
  }
  if (status === undefined) throw new Error('the agents did not all come alive');
  // Capacity: a copy serves tokens at the pace of its slowest stage (one call at a time per agent).
  const score = new Map(AGENTS.map((a) => [a.id, a.score]));
  const rng = createRng(deriveSeed(seed, 'serve-w5'));
  const meanTokens = 4; // uniform 1–7
  const copyRate = new Map(status.plan.pipelines.map((p) => [p.id, 1 / Math.max(...p.stages.map((s) => ((s.layerEnd - s.layerStart) * PER_LAYER_MS * meanTokens) / (score.get(s.nodeId) ?? 1)))]));
  const capacity = [...copyRate.values()].reduce((a, b) => a + b, 0); // requests per ms
  const copyOf = new Map(status.plan.pipelines.flatMap((p) => p.stages.map((s) => [s.nodeId, p.id] as const)));
  const arrivals: { at: number; tokens: number; replica: number }[] = [];
  let t = 0;
  for (let i = 0; i < requests; i++) {
    t += rng.exp(1 / (RHO * capacity));
    arrivals.push({ at: t, tokens: 1 + rng.int(7), replica: rng.int(replicas) });
  }
  const latencies: number[] = [];
  const traffic = new Map<string, number>();
  let errors = 0;
  const began = Date.now();
  await Promise.all(arrivals.map(async (a, i) => {
    await sleep(began + a.at - Date.now());
    const sent = Date.now();
    try {
      const r = await fetch(`${urls[a.replica]}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: `${String(i).padStart(4 * a.tokens, '.')}`.slice(0, 4 * a.tokens), steps: 1 }) });
      const body = (await r.json()) as { path?: { nodeId: string }[] };
      if (!r.ok) throw new Error(String(r.status));
      latencies.push(Date.now() - sent);
      const copy = copyOf.get(body.path?.[0]?.nodeId ?? '') ?? '?';
      traffic.set(copy, (traffic.get(copy) ?? 0) + 1);
    } catch {
      errors++;
    }
  }));
  const wall = (Date.now() - began) / 1000;
  await stopAll();
  const sorted = [...latencies].sort((x, y) => x - y);
  const shares = [...copyRate].map(([id, rate]) => `${id} ${(((traffic.get(id) ?? 0) / Math.max(latencies.length, 1)) * 100).toFixed(0)}% of traffic / ${((rate / capacity) * 100).toFixed(0)}% of capacity`).join(', ');
  return { p99: quantile(sorted, 0.99), row: `| ${seed} | ${variant} | ${requests} | ${(RHO * capacity * 1000).toFixed(1)}/s | ${wall.toFixed(1)} s | ${quantile(sorted, 0.5)} | ${quantile(sorted, 0.99)} | ${quantile(sorted, 0.999)} | ${errors} | ${loadavg()[0]?.toFixed(1)} | ${shares} |` };
}

async function main(): Promise<void> {
  const store = mkdtempSync(join(tmpdir(), 'hecate-w5-'));
  const bin = process.env['NATS_SERVER'] ?? (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server');
  const port = await freePort();
  const topology = join(store, 'topology.json');
  writeFileSync(topology, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 3 }], nodes: AGENTS }));
  const nats = spawn(bin, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', join(store, 'js')], { stdio: 'ignore' });
  try {
    await sleep(500);
    const rows: string[] = [];
    const p99 = new Map<string, number[]>(variants.map((v) => [v, []]));
    for (const [k, seed] of SEEDS.entries()) {
      // Each seed starts with another variant: a machine whose load drifts during a sequence favours none.
      for (const replicas of [...variants.slice(k % variants.length), ...variants.slice(0, k % variants.length)]) {
        const r = await run(`nats://127.0.0.1:${port}`, topology, replicas, seed);
        rows.push(r.row);
        p99.get(replicas)?.push(r.p99);
        console.error(r.row);
      }
    }
    console.log(`W5 with real processes (${BIN}): ρ ${RHO}, ${AGENTS.length} agents (scores ${AGENTS.map((a) => a.score).join(', ')}; 1 slot; ${PER_LAYER_MS} ms per layer-token at score 1), one-step generations of 1–7 tokens, seeds ${SEEDS.join(', ')}\n`);
    console.log('| seed | replicas | requests | arrivals | wall | p50 ms | p99 ms | p99.9 ms | errors | load avg | traffic vs capacity |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|');
    for (const row of rows) console.log(row);
    const one = p99.get('1');
    if (one !== undefined) {
      console.log(`\n| replicas | p99 ms per seed | p99 / one replica's, per seed | median ratio |\n|--:|---|---|--:|`);
      for (const [replicas, values] of p99) {
        const ratios = values.map((v, i) => v / (one[i] ?? NaN));
        console.log(`| ${replicas} | ${values.join(', ')} | ${ratios.map((r) => r.toFixed(2)).join(', ')} | ${median(ratios).toFixed(2)} |`);
      }
    }
  } finally {
    await stopAll();
    nats.kill('SIGTERM');
    rmSync(store, { recursive: true, force: true });
  }
}

await main();
