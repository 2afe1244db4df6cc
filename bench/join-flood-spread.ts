/**
 * Ordinary generations, and a real agent's join, under a join flood spread over many addresses
 * (docs/security.md, "Joins"): a real `hecate-node serve` and one agent; a hostile member (the
 * swarm secret; a process of its own: test/orchestrator/fixtures/fake-members.mjs, `flood`)
 * joins fresh ids with fresh keys as fast as it can, 16 at once, each from the next address of
 * 127.1.x.y. Each round measures a 1-step generation's p50 and p99 from 127.0.0.1 quiet, under
 * the same flood sent to a decoy that refuses every join (the flooder's own load on the machine,
 * serve untouched), then under the flood at serve, in the same run; in the first flooded round a
 * second, declared agent starts and its time to be alive is taken. Reported: each round's
 * ratios, their medians, serve's CPU per flood join, what the flood got, and the load (`uptime`)
 * before and after. Target: p99 flooded ≤ 2 × p99 quiet. Run: `npm
 * run build && npm run build:bench && node dist-bench/bench/join-flood-spread.js [rounds]`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateLatencies, quantile } from './generate-latencies.js';

const ROUNDS = Number(process.argv[2] ?? 3);
const SAMPLES = 150;
const BIN = new URL('../../dist/src/cli/main.js', import.meta.url).pathname;
const FAKES = new URL('../../test/orchestrator/fixtures/fake-members.mjs', import.meta.url).pathname;

function start(args: readonly string[], ready: RegExp, bin = BIN): Promise<{ proc: ChildProcess; url: string; out: () => string }> {
  const proc = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, HECATE_TOKEN_FILE: tokenFile } });
  let out = '';
  return new Promise((resolve, reject) => {
    proc.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = ready.exec(out);
      if (m !== null) resolve({ proc, url: m[1] as string, out: () => out });
    });
    proc.once('exit', () => reject(new Error(`${args[0]} exited`)));
  });
}

const median = (xs: readonly number[]): number => quantile(xs, 0.5);
const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');

const latencies = (url: string) => generateLatencies(url, SAMPLES);

/** CPU ms (user + system) process `pid` used so far, from /proc. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (100 Hz)
}

/** A stand-in for serve that refuses every join at once (429), its own process: the control flood's target. */
const DECOY = `require('node:http').createServer((q, r) => { q.resume(); q.on('end', () => r.writeHead(429, { 'content-type': 'application/json' }).end('{}')); }).listen(0, '0.0.0.0', function () { console.log('listening on http://127.0.0.1:' + this.address().port); });`;

async function aliveAfter(url: string, id: string): Promise<boolean> {
  const status = (await (await fetch(`${url}/v1/status?limit=1000`)).json()) as { nodes: { id: string; state: string }[] };
  return status.nodes.some((n) => n.id === id && n.state === 'alive');
}

const dir = mkdtempSync(join(tmpdir(), 'hecate-join-spread-'));
const topology = join(dir, 'topology.json');
writeFileSync(topology, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }], nodes: [{ id: 'h0', memoryGb: 16, score: 3 }, { id: 'late', memoryGb: 16, score: 1 }] }));
const tokenFile = join(dir, 'swarm-token');
const loadBefore = load();
const serve = await start(['serve', '--port', '0', '--token-file', tokenFile, '--topology', topology], /listening on (http:\/\/\S+)/);
const agents: ChildProcess[] = [];
try {
  agents.push((await start(['agent', '--id', 'h0', '--memory', '16', '--score', '3', '--join', serve.url, '--port', '0', '--token-file', tokenFile, '--jitter', '0'], /listening on (http:\/\/[0-9.:]+),/)).proc);
  for (let i = 0; i < 100; i++) if ((await fetch(`${serve.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: 'warm', steps: 1 }) })).status === 200) break;
  else await new Promise((r) => setTimeout(r, 200));
  const decoy = spawn(process.execPath, ['-e', DECOY], { stdio: ['ignore', 'pipe', 'inherit'] });
  agents.push(decoy);
  const decoyUrl = await new Promise<string>((resolve) => {
    let out = '';
    decoy.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /listening on (\S+)/.exec(out);
      if (m !== null) resolve(m[1] as string);
    });
  });
  type Round = { quiet: Awaited<ReturnType<typeof latencies>>; control: Awaited<ReturnType<typeof latencies>>; flooded: Awaited<ReturnType<typeof latencies>>; flood: string; serveCpuMsPerJoin: number };
  const rounds: Round[] = [];
  let lateAliveMs = Number.NaN;
  const stop = async (proc: ChildProcess) => {
    const exited = new Promise<void>((res) => proc.once('exit', () => res()));
    proc.kill('SIGTERM');
    await exited;
  };
  const servePid = serve.proc.pid as number;
  for (let r = 0; r < ROUNDS; r++) {
    const quiet = await latencies(serve.url);
    // The same flood at a decoy: what the flooder's own load costs the machine, serve untouched.
    const controlFlood = await start([decoyUrl, `decoy-r${r}-`, '0', '1', 'flood'], /(flooding)/, FAKES);
    const control = await latencies(serve.url);
    await stop(controlFlood.proc);
    const cpuBefore = cpuMs(servePid);
    const flood = await start([serve.url, `fake-r${r}-`, '0', '1', 'flood'], /(flooding)/, FAKES);
    let late: Promise<void> = Promise.resolve();
    if (r === 0) {
      const startedAt = performance.now();
      late = start(['agent', '--id', 'late', '--memory', '16', '--score', '1', '--join', serve.url, '--port', '0', '--token-file', tokenFile, '--jitter', '0'], /listening on (http:\/\/[0-9.:]+),/).then(async (a) => {
        agents.push(a.proc);
        while (!(await aliveAfter(serve.url, 'late'))) await new Promise((res) => setTimeout(res, 50));
        lateAliveMs = performance.now() - startedAt;
      });
    }
    const flooded = await latencies(serve.url);
    await late;
    await stop(flood.proc);
    const answers = JSON.parse(/answers (.*)/.exec(flood.out())?.[1] ?? '{}') as Record<string, number>;
    const joins = Object.values(answers).reduce((a, b) => a + b, 0);
    rounds.push({ quiet, control, flooded, flood: JSON.stringify(answers), serveCpuMsPerJoin: (cpuMs(servePid) - cpuBefore) / joins });
  }
  const metrics = await (await fetch(`${serve.url}/metrics`)).text();
  const counter = (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0);
  const p99Ratios = rounds.map((x) => x.flooded.p99 / x.quiet.p99);
  const p50Ratios = rounds.map((x) => x.flooded.p50 / x.quiet.p50);
  const controlP99Ratios = rounds.map((x) => x.control.p99 / x.quiet.p99);
  const servedP99Ratios = rounds.map((x) => x.flooded.p99 / x.control.p99);
  console.log(JSON.stringify({
    rounds: rounds.map((x, i) => ({ ...x, p99Ratio: p99Ratios[i], p50Ratio: p50Ratios[i] })),
    medianP99Ratio: median(p99Ratios),
    medianP50Ratio: median(p50Ratios),
    // The flood at the decoy against quiet (the flooder's own load), and at serve against at the decoy (serve's handling of it).
    medianControlP99Ratio: median(controlP99Ratios),
    medianP99RatioOverControl: median(servedP99Ratios),
    medianServeCpuMsPerJoin: median(rounds.map((x) => x.serveCpuMsPerJoin)),
    lateAgentAliveMs: Math.round(lateAliveMs),
    joinsAdmitted: counter('hecate_node_joins_total{kind="join"}'),
    joinsRefusedRate: counter('hecate_node_joins_refused_total{reason="rate"}'),
    loadBefore,
    loadAfter: load(),
  }, null, 2));
} finally {
  serve.proc.kill('SIGKILL');
  for (const a of agents) a.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
