/**
 * Helpers of the edge tests: a process's resident memory from /proc, a rogue agent process
 * (fixtures/rogue-agent.mjs), JSON posts (signed like a member's when given a signer), and the
 * serve/agent CLI on a topology file, each serve with its own swarm secret in a temp directory.
 */
import { spawn } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentKey, type AgentKey } from '../../src/wire/agent-key.js';
import { signedHeaders, type RequestSigner } from '../../src/wire/signed-headers.js';
import { startCli, type Child } from './processes.js';

/** Resident memory of process `pid` in MB, from /proc/<pid>/status (VmRSS). */
export function rssMb(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (line === null) throw new Error(`no VmRSS for process ${pid}`);
  return Number(line[1]) / 1024;
}

/** What members of the orchestrator at `url` (any URL on it) sign for: its `GET /v1/audience`. */
export async function audienceOf(url: string): Promise<string> {
  const answer = (await (await fetch(`${new URL(url).origin}/v1/audience`)).json()) as { audience: string };
  return answer.audience;
}

/**
 * POSTs JSON, signed by `signer` (the swarm secret, and an agent's key when it has one) or
 * unsigned without; resolves with the status and the parsed body.
 */
export async function postJson(url: string, body: unknown, signer?: RequestSigner): Promise<{ status: number; body: any }> {
  const sent = JSON.stringify(body);
  const headers = { 'content-type': 'application/json', ...(signer !== undefined ? signedHeaders(signer, 'POST', url, sent, Date.now(), await audienceOf(url)) : {}) };
  const response = await fetch(url, { method: 'POST', headers, body: sent });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, body: parsed };
}

/** A topology file in the temp directory. */
export function topologyFile(name: string, value: unknown): string {
  const file = join(tmpdir(), `hecate-${name}-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

/** A started serve: its child, URL, the directory of its swarm secret (`tokenFile`), the secret and the operator token. */
export interface StartedServe {
  readonly child: Child;
  readonly url: string;
  readonly dir: string;
  readonly tokenFile: string;
  readonly secret: Buffer;
  readonly operatorToken: string;
}

const dirs: string[] = [];

/** Removes the temp directories of the serves started (call after their processes are stopped). */
export function removeServeDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** How a command is started: in this process, or a child with `process: true` (startCli). */
export type StartHow = { readonly process?: boolean };

/**
 * Starts `hecate-node serve --port 0 ...args` with its swarm secret and operator token in a new temp
 * directory: a child process (the attack suite's target), unless `how.process` is false.
 */
export async function startServe(name: string, args: readonly string[], how: StartHow = { process: true }): Promise<StartedServe> {
  const dir = mkdtempSync(join(tmpdir(), 'hecate-edge-'));
  dirs.push(dir);
  const tokenFile = join(dir, 'swarm-token');
  const operatorFile = join(dir, 'operator-token');
  const { child, match } = await startCli(name, ['serve', '--port', '0', '--token-file', tokenFile, '--operator-token-file', operatorFile, ...args], /listening on (https?:\/\/127\.0\.0\.1:\d+)/, 30_000, how);
  return { child, url: match, dir, tokenFile, secret: Buffer.from(readFileSync(tokenFile, 'utf8').trim()), operatorToken: readFileSync(operatorFile, 'utf8').trim() };
}

/** Starts an honest `hecate-node agent` of `serve` (its secret; its key in agent-ID.json beside it): in this process unless `how.process`. */
export async function startAgentCli(id: string, serve: StartedServe, memoryGb: number, score: number, extra: readonly string[] = [], how: StartHow = {}): Promise<{ child: Child; url: string }> {
  const { child, match } = await startCli(id, ['agent', '--id', id, '--memory', String(memoryGb), '--score', String(score), '--join', serve.url, '--port', '0', '--token-file', serve.tokenFile, ...extra], /listening on (https?:\/\/[0-9.]+:\d+)/, 30_000, how);
  return { child, url: match };
}

/** The key of agent `id` started by {@link startAgentCli} (its state file). */
export function agentKeyOf(serve: StartedServe, id: string): AgentKey {
  return loadAgentKey(join(serve.dir, `agent-${id}.json`), id).key;
}

/** A fresh ed25519 key signing as agent `id`, held in memory only. */
export function freshKey(id: string): AgentKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { id, privateKey, publicKey: String(createPublicKey(privateKey).export({ format: 'jwk' }).x) };
}

/**
 * A member of `serve`'s swarm signing as agent `id`: the swarm secret and a key of its own. A
 * hostile member is still a member; what it sends is checked at the edge after its signature.
 */
export function member(serve: StartedServe, id: string, key: AgentKey = freshKey(id)): RequestSigner {
  return { secret: serve.secret, key };
}

const ROGUE = join(import.meta.dirname, 'fixtures', 'rogue-agent.mjs');

/**
 * A rogue agent process: a member of `serve`'s swarm (its secret, its own key kept in
 * rogue-ID.json there, the same on every start) that joins as `id` and answers stage calls as
 * `mode` says (fixtures/rogue-agent.mjs); `tls` serves its stage calls over https and trusts
 * that certificate.
 */
export async function startRogue(serve: StartedServe, id: string, memoryGb: number, score: number, mode: string, extra = '', tls?: { cert: string; key: string }): Promise<{ kill: () => Promise<void>; pid: number }> {
  const tlsEnv = tls === undefined ? {} : { HECATE_TLS_CERT: tls.cert, HECATE_TLS_KEY: tls.key, NODE_EXTRA_CA_CERTS: tls.cert };
  const env = { ...process.env, HECATE_TOKEN_FILE: serve.tokenFile, HECATE_STATE_FILE: join(serve.dir, `rogue-${id}.json`), ...tlsEnv };
  const proc = spawn(process.execPath, [ROGUE, serve.url, id, String(memoryGb), String(score), mode, extra], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  proc.stderr?.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (out.includes('listening on')) resolve();
    });
    void exited.then(() => reject(new Error(`rogue ${id} exited: ${err}`)));
  });
  return {
    pid: proc.pid as number,
    kill: async () => {
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** The agents of `GET /v1/status` by id: as a client sees them (no URLs), or as the operator with its token. */
export async function statusNodes(url: string, operatorToken?: string): Promise<Map<string, { state: string; downCause: string | null; url: string | null }>> {
  const headers: Record<string, string> = operatorToken === undefined ? {} : { authorization: `Bearer ${operatorToken}` };
  const status = (await (await fetch(`${url}/v1/status?limit=1000`, { headers })).json()) as { nodes: { id: string; state: string; downCause: string | null; url: string | null }[] };
  return new Map(status.nodes.map((n) => [n.id, n]));
}

const FAKES = join(import.meta.dirname, 'fixtures', 'fake-members.mjs');

/**
 * Fake members of `serve`'s swarm in one process (fixtures/fake-members.mjs): `silent`, `count`
 * ids `prefix0…` that heartbeat and never answer a stage call; `flood`, new ids joined as fast as
 * they can from many 127.1.x.y addresses. `stop` ends it (SIGTERM) and resolves with what it printed then.
 */
export async function startFakes(serve: StartedServe, prefix: string, count: number, score: number, mode: 'silent' | 'flood'): Promise<{ stop: () => Promise<string> }> {
  const proc = spawn(process.execPath, [FAKES, serve.url, prefix, String(count), String(score), mode], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HECATE_TOKEN_FILE: serve.tokenFile } });
  let err = '';
  let out = '';
  proc.stderr?.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    proc.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (out.includes('listening on') || out.includes('flooding')) resolve();
    });
    void exited.then(() => reject(new Error(`fake members ${prefix} exited: ${err}`)));
  });
  return {
    stop: async () => {
      const before = out.length;
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(killer);
      return out.slice(before);
    },
  };
}

/** The members `GET /v1/status` counts (`nodesTotal`). */
export async function statusTotal(url: string): Promise<number> {
  return ((await (await fetch(`${url}/v1/status?limit=1`)).json()) as { nodesTotal: number }).nodesTotal;
}
