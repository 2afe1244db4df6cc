/**
 * Verification by redundant execution with real processes: the chaos test's topology (a `serve`
 * and 8 `agent` processes on loopback, `--per-layer-ms 0.05`), one agent lying on 10% of its calls
 * (`--lie-rate 0.1`), generations of 4–8 steps, 16 at once, at the default sample, until the liar
 * is quarantined or `generations` have run. Prints the generation it was quarantined at, the
 * verdicts, the wrong answers the clients got, and the stage calls by outcome. The cross-check of
 * bench/verify-spans.ts (in process, 10 seeds, 10,000 honest generations).
 * Run: `npm run build && npm run build:bench && node dist-bench/bench/verify-spans-real.js [liar] [generations]`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectedDigest } from '../src/wire/digest.js';

const LIAR = process.argv[2] ?? 'n4';
const GENERATIONS = Number(process.argv[3] ?? 1000);
const CONCURRENCY = 16;
const BIN = new URL('../../dist/src/cli/main.js', import.meta.url).pathname;
const nodes = [1, 1.5, 2, 2.5, 3, 2, 1.5, 1].map((score, i) => ({ id: `n${i + 1}`, memoryGb: 6, score }));
const dir = mkdtempSync(join(tmpdir(), 'hecate-verify-real-'));
const topology = join(dir, 'topology.json');
const tokenFile = join(dir, 'swarm-token');
writeFileSync(topology, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 3 }], nodes }));
const children: ChildProcess[] = [];

function start(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'ignore'], cwd: dir });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(out);
      if (m?.[1] !== undefined) resolve(m[1]);
    });
    child.once('exit', () => reject(new Error(`${args[0]} exited`)));
  });
}

const metrics = async (url: string): Promise<string[]> => (await (await fetch(`${url}/metrics`)).text()).split('\n').filter((l) => /^hecate_(verifications|detection_events)_total/.test(l));
try {
  const url = await start(['serve', '--port', '0', '--topology', topology, '--token-file', tokenFile, '--per-layer-ms', '0.05']);
  for (const n of nodes) {
    await start(['agent', '--id', n.id, '--memory', String(n.memoryGb), '--score', String(n.score), '--join', url, '--port', '0', '--token-file', tokenFile, '--per-layer-ms', '0.05', ...(n.id === LIAR ? ['--lie-rate', '0.1', '--seed', '4'] : [])]);
  }
  const status = async () => (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { id: string; state: string; downCause: string | null }[] };
  for (let i = 0; i < 100 && !((await status()).status === 'healthy' && (await status()).nodes.every((n) => n.state === 'alive')); i++) await new Promise((r) => setTimeout(r, 200));
  let next = 0;
  let quarantinedAt: number | undefined;
  let wrong = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (next < GENERATIONS && quarantinedAt === undefined) {
      const i = next++;
      const steps = 4 + (i % 5);
      const prompt = `prompt ${i}`;
      const response = await fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt, steps }) });
      const body = (await response.json()) as { digest?: string };
      if (!response.ok) failed++;
      else if (body.digest !== expectedDigest(12, prompt, steps)) wrong++;
      if (i % 10 === 0 && quarantinedAt === undefined && (await status()).nodes.find((n) => n.id === LIAR)?.downCause === 'integrity') quarantinedAt = i;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const after = await status();
  console.log(`verify-spans-real: liar ${LIAR} (lie rate 0.1), default sample, ${CONCURRENCY} at once, ${next} generations in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  console.log(`liar: ${quarantinedAt === undefined ? `not quarantined (state ${after.nodes.find((n) => n.id === LIAR)?.state})` : `quarantined by generation ${quarantinedAt} (checked every 10)`}; others down: ${after.nodes.filter((n) => n.id !== LIAR && n.state === 'down').map((n) => `${n.id} (${n.downCause})`).join(', ') || 'none'}`);
  console.log(`answers: ${wrong} wrong, ${failed} failed (a lie on a call not checked reaches the client)`);
  console.log((await metrics(url)).join('\n'));
} finally {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
