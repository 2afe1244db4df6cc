/**
 * Helpers of the edge tests: a process's resident memory from /proc, a rogue agent process
 * (fixtures/rogue-agent.mjs), JSON posts, and the serve/agent CLI on a topology file.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCli, type Child } from './processes.js';

/** Resident memory of process `pid` in MB, from /proc/<pid>/status (VmRSS). */
export function rssMb(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (line === null) throw new Error(`no VmRSS for process ${pid}`);
  return Number(line[1]) / 1024;
}

/** POSTs JSON; resolves with the status and the parsed body. */
export async function postJson(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
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

/** Starts `hecate-node serve --port 0 ...args`; resolves with its child and URL. */
export async function startServe(name: string, args: readonly string[]): Promise<{ child: Child; url: string }> {
  const { child, match } = await startCli(name, ['serve', '--port', '0', ...args], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  return { child, url: match };
}

/** Starts an honest `hecate-node agent`. */
export async function startAgentCli(id: string, join: string, memoryGb: number, score: number, extra: readonly string[] = []): Promise<{ child: Child; url: string }> {
  const { child, match } = await startCli(id, ['agent', '--id', id, '--memory', String(memoryGb), '--score', String(score), '--join', join, '--port', '0', ...extra], /listening on (http:\/\/[0-9.]+:\d+)/);
  return { child, url: match };
}

const ROGUE = join(import.meta.dirname, 'fixtures', 'rogue-agent.mjs');

/** A rogue agent process: joins as `id` and answers stage calls as `mode` says (fixtures/rogue-agent.mjs). */
export async function startRogue(join: string, id: string, memoryGb: number, score: number, mode: string, extra = ''): Promise<{ kill: () => Promise<void>; pid: number }> {
  const proc = spawn(process.execPath, [ROGUE, join, id, String(memoryGb), String(score), mode, extra], { stdio: ['ignore', 'pipe', 'pipe'] });
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

/** The agents of `GET /v1/status` by id. */
export async function statusNodes(url: string): Promise<Map<string, { state: string; downCause: string | null; url: string | null }>> {
  const status = (await (await fetch(`${url}/v1/status?limit=1000`)).json()) as { nodes: { id: string; state: string; downCause: string | null; url: string | null }[] };
  return new Map(status.nodes.map((n) => [n.id, n]));
}
