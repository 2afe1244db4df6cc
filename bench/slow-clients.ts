/**
 * Ordinary generations under slow clients (docs/security.md, "Connections and bodies"): a real
 * `hecate-node serve` and one agent; 1,000 connections to each from 10 source addresses sending
 * their requests a byte every 100 ms (a process of their own: test/orchestrator/slow-clients.ts).
 * Measured: the p50 and p99 of a 1-step generation from 127.0.0.1, quiet and under the flood, in
 * the same run, and both processes' RSS. Target: p99 flooded ≤ 2 × p99 quiet. Run: `npm run build
 * && npm run build:bench && node dist-bench/bench/slow-clients.js [connections]`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSlowClients, type SlowRequest } from '../test/orchestrator/slow-clients.js';
import { generateLatencies } from './generate-latencies.js';

const FLOOD_ROLE = process.argv[2] === '--flood';
const COUNT = Number((FLOOD_ROLE ? process.argv[5] : process.argv[2]) ?? 1000);
const SAMPLES = 150;
const BIN = new URL('../../dist/src/cli/main.js', import.meta.url).pathname;

const signedLook = (audience: string): string => [`x-hecate-audience: ${audience}`, `x-hecate-timestamp: ${Date.now()}`, `x-hecate-nonce: ${randomBytes(16).toString('hex')}`, `x-hecate-signature: ${'0'.repeat(64)}`, 'x-hecate-agent-key: AAAA', 'x-hecate-agent-signature: AAAA'].join('\r\n');
const post = (path: string, extra: string): string => `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n${extra}`;

/** The flood's own process: slow connections to serve and the agent until killed. */
async function floodRole(serveUrl: string, agentUrl: string): Promise<void> {
  const serveAudience = ((await (await fetch(`${serveUrl}/v1/audience`)).json()) as { audience: string }).audience;
  const pad = `x-pad: ${'a'.repeat(1000)}`;
  const toServe = (i: number): SlowRequest => ({ head: post(i % 2 === 0 ? '/v1/generate' : '/v1/nodes', i % 4 === 0 ? pad : signedLook(serveAudience)), bodyLength: 8000, slowHead: i % 4 === 0 });
  const toAgent = (i: number): SlowRequest => ({ head: post(i % 2 === 0 ? '/v1/stage' : '/v1/sessions/drop', i % 4 === 0 ? pad : signedLook('agent/h0')), bodyLength: 2000, slowHead: i % 4 === 0 });
  await Promise.all([openSlowClients(serveUrl, COUNT, toServe, { sources: 10, tickMs: 100 }), openSlowClients(agentUrl, COUNT, toAgent, { sources: 10, tickMs: 100 })]);
  process.stdout.write('flooding\n');
  await new Promise(() => undefined);
}

function start(args: readonly string[], ready: RegExp): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = ready.exec(out);
      if (m !== null) resolve({ proc, url: m[1] as string });
    });
    proc.once('exit', () => reject(new Error(`${args[0]} exited`)));
  });
}

const rss = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

const latencies = (url: string) => generateLatencies(url, SAMPLES);

if (FLOOD_ROLE) {
  await floodRole(process.argv[3] as string, process.argv[4] as string);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'hecate-slow-bench-'));
  const topology = join(dir, 'topology.json');
  writeFileSync(topology, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }], nodes: [{ id: 'h0', memoryGb: 16, score: 3 }] }));
  const tokenFile = join(dir, 'swarm-token');
  const serve = await start(['serve', '--port', '0', '--token-file', tokenFile, '--topology', topology], /listening on (http:\/\/\S+)/);
  const agent = await start(['agent', '--id', 'h0', '--memory', '16', '--score', '3', '--join', serve.url, '--port', '0', '--token-file', tokenFile, '--jitter', '0'], /listening on (http:\/\/[0-9.:]+),/);
  try {
    for (let i = 0; i < 100; i++) if ((await fetch(`${serve.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: 'warm', steps: 1 }) })).status === 200) break;
    else await new Promise((r) => setTimeout(r, 200));
    const before = { serve: rss(serve.proc.pid as number), agent: rss(agent.proc.pid as number) };
    const quiet = await latencies(serve.url);
    const flood = spawn(process.execPath, [new URL(import.meta.url).pathname, '--flood', serve.url, agent.url, String(COUNT)], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => flood.stdout?.setEncoding('utf8').on('data', (c: string) => c.includes('flooding') && resolve()));
    const flooded = await latencies(serve.url);
    const after = { serve: rss(serve.proc.pid as number), agent: rss(agent.proc.pid as number) };
    flood.kill('SIGKILL');
    console.log(JSON.stringify({ connections: COUNT, quiet, flooded, p99Ratio: flooded.p99 / quiet.p99, p50Ratio: flooded.p50 / quiet.p50, rssMb: { before, after } }, null, 2));
  } finally {
    serve.proc.kill('SIGKILL');
    agent.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
