/**
 * Join latency under a flood of fake ids (docs/security.md, "Joins"): a real `hecate-node serve`
 * process; 20 honest agents (the swarm secret, a key each) joined from 127.0.0.1, then rejoining
 * one after another — a restart's join, of an id the orchestrator knows — while a hostile member
 * (it holds the secret; a process of its own) sends 2,000 joins of fresh ids, each with a fresh
 * key, 50 at a time, from 127.0.0.2. Measured: the honest joins' p50 and p99, quiet and under the flood (the issue: 4.5 →
 * 52 ms p50 before the flood limits), what the flood got (accepted, refused by status), and the
 * members and /v1/status size after it. Run: `npm run build && npm run build:bench && node
 * dist-bench/bench/join-flood.js [floodJoins]`.
 */
import { spawn } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentKey } from '../src/wire/agent-key.js';
import { signedHeaders, type RequestSigner } from '../src/wire/signed-headers.js';

const FLOOD_ROLE = process.argv[2] === '--flood';
const FLOOD = Number((FLOOD_ROLE ? process.argv[5] : process.argv[2]) ?? 2000);
const FLOOD_CONCURRENCY = 50;
const HONEST = 20;
const SAMPLES = 200;
const BIN = new URL('../../dist/src/cli/main.js', import.meta.url).pathname;

function freshKey(id: string): AgentKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { id, privateKey, publicKey: String(createPublicKey(privateKey).export({ format: 'jwk' }).x) };
}

/** What members of the serve at `url` sign for (its `GET /v1/audience`), asked once. */
let audience: string | undefined;

/** A signed POST from `localAddress`; resolves with the status and the ms it took. */
async function post(url: string, body: unknown, signer: RequestSigner, localAddress: string): Promise<{ status: number; ms: number }> {
  audience ??= ((await (await fetch(`${new URL(url).origin}/v1/audience`)).json()) as { audience: string }).audience;
  const text = JSON.stringify(body);
  const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...signedHeaders(signer, 'POST', url, text, Date.now(), audience) };
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const r = request(url, { method: 'POST', headers, localAddress, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, ms: performance.now() - started }));
    });
    r.on('error', reject);
    r.end(text);
  });
}

const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

/** The flooder, its own process (so the honest joins' timing is not its event loop's): `--flood URL TOKENFILE COUNT`. */
async function floodRole(url: string, tokenFile: string): Promise<void> {
  const secret = Buffer.from(readFileSync(tokenFile, 'utf8').trim());
  const statuses: Record<string, number> = {};
  let sent = 0;
  const flooder = async (): Promise<void> => {
    while (sent < FLOOD) {
      const id = `fake${sent++}`;
      const r = await post(`${url}/v1/nodes`, { id, memoryGb: 6, score: 1, url: `http://127.0.0.2:${20_000 + (sent % 40_000)}` }, { secret, key: freshKey(id) }, '127.0.0.2');
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: FLOOD_CONCURRENCY }, flooder));
  process.stdout.write(JSON.stringify(statuses));
}

if (FLOOD_ROLE) {
  await floodRole(process.argv[3] as string, process.argv[4] as string);
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'hecate-join-flood-'));
const tokenFile = join(dir, 'swarm-token');
const serve = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--token-file', tokenFile, '--forget-after-ms', '600000'], { stdio: ['ignore', 'pipe', 'inherit'] });
try {
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    serve.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m?.[1] !== undefined) resolve(m[1]);
    });
    serve.once('exit', () => reject(new Error('serve exited')));
  });
  const secret = Buffer.from(readFileSync(tokenFile, 'utf8').trim());
  const honest = Array.from({ length: HONEST }, (_, i) => ({ id: `h${i}`, signer: { secret, key: freshKey(`h${i}`) } }));
  const joinOf = (id: string, host: string) => ({ id, memoryGb: 6, score: 1, url: `http://${host}:${20_000 + (Number(id.replace(/\D/g, '')) % 40_000)}` });
  for (const h of honest) {
    const r = await post(`${url}/v1/nodes`, joinOf(h.id, '127.0.0.1'), h.signer, '127.0.0.1');
    if (r.status !== 200) throw new Error(`honest join ${h.id}: ${r.status}`);
  }
  /** Honest rejoins, one after another, until `until` says stop (or `count` are done). */
  const rejoins = async (count: number, until: () => boolean = () => false): Promise<number[]> => {
    const ms: number[] = [];
    for (let i = 0; i < count && !until(); i++) {
      const h = honest[i % HONEST] as (typeof honest)[number];
      const r = await post(`${url}/v1/nodes`, joinOf(h.id, '127.0.0.1'), h.signer, '127.0.0.1');
      if (r.status !== 200) throw new Error(`honest rejoin ${h.id}: ${r.status}`);
      ms.push(r.ms);
    }
    return ms;
  };
  await rejoins(50); // warm-up
  const quiet = await rejoins(SAMPLES);

  let floodDone = false;
  const floodStarted = performance.now();
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, '--flood', url, tokenFile, String(FLOOD)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let floodOut = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (floodOut += c));
  const flood = new Promise<void>((resolve) => child.once('exit', () => resolve())).then(() => (floodDone = true));
  const underFlood = await rejoins(Number.POSITIVE_INFINITY, () => floodDone);
  await flood;
  const statuses = new Map(Object.entries(JSON.parse(floodOut || '{}') as Record<string, number>).map(([k, v]) => [Number(k), v]));
  const floodMs = performance.now() - floodStarted;
  const status = await fetch(`${url}/v1/status`);
  const statusText = await status.text();
  const members = (JSON.parse(statusText) as { nodesTotal: number }).nodesTotal;

  const fmt = (xs: number[]) => `p50 ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms (${xs.length} joins)`;
  console.log(`join-flood: ${HONEST} honest agents rejoining from 127.0.0.1; ${FLOOD} joins of fresh ids and keys from 127.0.0.2, ${FLOOD_CONCURRENCY} at a time`);
  console.log(`quiet:       ${fmt(quiet)}`);
  console.log(`under flood: ${fmt(underFlood)}; ratio of p50s ${(quantile(underFlood, 0.5) / quantile(quiet, 0.5)).toFixed(2)}`);
  console.log(`flood: ${FLOOD} joins in ${(floodMs / 1000).toFixed(1)} s, answered ${[...statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(', ')}; members after: ${members}; /v1/status ${statusText.length} bytes`);
} finally {
  serve.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
