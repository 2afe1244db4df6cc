/**
 * Issue 41, point 6: a signed request captured on its way to one receiver and sent to another, or
 * to the same one restarted (docs/security.md, "Signed requests"). Real processes: two
 * `hecate-node serve` on one replicated swarm over a real nats-server, a lone one, and two
 * `hecate-node agent`s, each restarted as a new process. The captured requests are signed here
 * exactly as an agent or the orchestrator signs them (signedHeaders), and sent byte for byte again.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MAX_AHEAD_MS } from '../../src/agent/stage-guard.js';
import { loadAgentKey, type AgentKey } from '../../src/wire/agent-key.js';
import { DROP_PATH } from '../../src/wire/drop-protocol.js';
import { FRAME_CONTENT_TYPE } from '../../src/wire/frames.js';
import { agentAudience } from '../../src/wire/request-signing.js';
import { signedHeaders } from '../../src/wire/signed-headers.js';
import { stageMessage } from '../agent/stage-messages.js';
import { freePort, NatsServer } from '../replication/nats-server.js';
import { audienceOf, topologyFile } from './edge-helpers.js';
import { startCli, stopAll, type Child } from './processes.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-replay-'));
const secret = Buffer.from('5'.repeat(64));
const models = [{ id: 'base', kind: 'base' as const, layers: 4, pipelines: 1 }];
const topology = topologyFile('replay', { models, nodes: [{ id: 'a4', memoryGb: 8, score: 2 }] });
let nats: NatsServer;
let key: AgentKey;

/** The swarm secret in a directory of `name`'s own (its key bindings are kept beside it). */
function tokenIn(name: string): string {
  const home = join(dir, name);
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'swarm-token'), secret.toString('utf8'), { mode: 0o600 });
  return join(home, 'swarm-token');
}

/** `hecate-node serve` on `port` (0: any) as a process, with `extra` flags: its child and URL. */
async function serve(name: string, port: number, extra: readonly string[]): Promise<{ child: Child; url: string }> {
  const { child, match } = await startCli(name, ['serve', '--port', String(port), '--topology', topology, '--token-file', tokenIn(name), ...extra], /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true });
  return { child, url: match };
}

beforeAll(async () => {
  nats = await NatsServer.start();
  key = loadAgentKey(join(dir, 'a4.json'), 'a4').key;
}, 30_000);

afterAll(async () => {
  await stopAll();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** A request as captured: where it went, its headers and body. */
interface Captured {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string | Uint8Array;
}

/** Stops `child` with SIGTERM and waits for its exit, and for this process's pooled connections to see it (the next start takes its port). */
async function closed(child: Child): Promise<void> {
  child.process.kill('SIGTERM');
  await child.exited;
  await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Agent a4's signed member request to the orchestrator at `base`, as its membership signs it. */
async function member(base: string, path: string, body: unknown): Promise<Captured> {
  const text = JSON.stringify(body);
  return { path, body: text, headers: { 'content-type': 'application/json', ...signedHeaders({ secret, key }, 'POST', `${base}${path}`, text, Date.now(), await audienceOf(base)) } };
}

/** Sends `captured` to `base`: its status and error message. */
async function send(base: string, captured: Captured): Promise<{ status: number; message: string }> {
  const response = await fetch(`${base}${captured.path}`, { method: 'POST', headers: captured.headers, body: captured.body });
  const text = await response.text();
  return { status: response.status, message: response.ok ? '' : String((JSON.parse(text) as { error?: { message?: string } }).error?.message) };
}

describe('member requests replayed across the replicas of a swarm', () => {
  it('a join or leave taken by one replica is refused by the other, and by it restarted; a swarm of another name refuses them', async () => {
    const replicated = ['--nats', nats.url, '--swarm', `replay${process.pid}`];
    const a = await serve('serve A', 0, replicated);
    const bPort = await freePort();
    let b = await serve('serve B', bPort, replicated);
    expect(await audienceOf(a.url)).toBe(`swarm/replay${process.pid}`);
    expect(await audienceOf(b.url)).toBe(await audienceOf(a.url)); // one audience for the swarm

    const oldJoin = await member(a.url, '/v1/nodes', { id: 'a4', memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' });
    expect(await send(a.url, oldJoin)).toEqual({ status: 200, message: "" });
    const replayedJoin = await send(b.url, oldJoin);
    expect(replayedJoin.status).toBe(401);
    expect(replayedJoin.message).toContain(`already used at an orchestrator of swarm "replay${process.pid}"`);

    const leave = await member(a.url, '/v1/nodes/a4/leave', {});
    expect((await send(a.url, leave)).status).toBe(200);
    expect((await send(b.url, leave)).status).toBe(401);
    const beat = await member(b.url, '/v1/nodes/a4/heartbeat', {});
    expect((await send(b.url, beat)).status).not.toBe(401); // taken (404: a4 left)
    expect((await send(a.url, beat)).status).toBe(401);

    // B restarted, a new process: the nonces live in the swarm's bucket, not in B.
    await closed(b.child);
    b = await serve('serve B again', bPort, replicated);
    for (const captured of [oldJoin, leave, beat]) expect((await send(b.url, captured)).status).toBe(401);

    // A lone orchestrator with the same secret: signed for another receiver.
    const lone = await serve('serve lone', 0, []);
    const elsewhere = await send(lone.url, await member(a.url, '/v1/nodes', { id: 'a4', memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' }));
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.message).toContain(`signed for "swarm/replay${process.pid}"`);
  }, 60_000);

  it('a lone orchestrator restarted refuses what its last run took (its audience is new each start)', async () => {
    const port = await freePort();
    let o = await serve('serve restarted', port, []);
    const first = await audienceOf(o.url);
    const joined = await member(o.url, '/v1/nodes', { id: 'a4', memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' });
    expect((await send(o.url, joined)).status).toBe(200);
    await closed(o.child);
    o = await serve('serve restarted again', port, []);
    expect(await audienceOf(o.url)).not.toBe(first);
    const replayed = await send(o.url, joined);
    expect(replayed.status).toBe(401);
    expect(replayed.message).toContain('not for this receiver');
  }, 30_000);
});

describe('orchestrator calls replayed to another agent, or to the agent restarted', () => {
  let a1: { child: Child; url: string };
  let a2: { child: Child; url: string };
  /** `hecate-node agent` `id` as a process, joining an orchestrator that is not there (calls to it are the point). */
  const agent = async (id: string, port = 0) => {
    const { child, match } = await startCli(id, ['agent', '--id', id, '--memory', '8', '--score', '1', '--join', `http://127.0.0.1:${await freePort()}`, '--port', String(port), '--per-layer-ms', '0', '--jitter', '0', '--token-file', tokenIn(id), '--state-file', join(dir, `${id}.json`)], /listening on (http:\/\/[0-9.]+:\d+)/, 30_000, { process: true });
    return { child, url: match };
  };
  /** A call to agent `id` at `url`, as the orchestrator signs it. */
  const call = (url: string, id: string, path: string, body: string | Uint8Array, contentType: string): Captured => ({ path, body, headers: { 'content-type': contentType, ...signedHeaders({ secret }, 'POST', `${url}${path}`, body, Date.now(), agentAudience(id)) } });
  const stage = (url: string, id: string, sessionId: string) => call(url, id, '/v1/stage', stageMessage({ sessionId, modelId: 'base', layerStart: 0, layerEnd: 2, step: 0, fresh: true, tokens: 1, input: 7, replay: [] }), FRAME_CONTENT_TYPE);

  beforeAll(async () => {
    [a1, a2] = await Promise.all([agent('a1'), agent('a2')]);
    await new Promise((resolve) => setTimeout(resolve, AGENT_MAX_AHEAD_MS)); // they take calls from then
  });

  it('a stage call and a session drop signed for a1 are refused by a2 (401), before their body is read', async () => {
    const captured = stage(a1.url, 'a1', 's1');
    expect((await send(a1.url, captured)).status).toBe(200);
    const replayed = await send(a2.url, captured);
    expect(replayed.status).toBe(401);
    expect(replayed.message).toContain('signed for "agent/a1", not for this receiver ("agent/a2")');
    const drop = call(a1.url, 'a1', DROP_PATH, JSON.stringify({ sessionId: 's1' }), 'application/json');
    expect((await send(a1.url, drop)).status).toBe(200);
    expect((await send(a2.url, drop)).status).toBe(401);
  });

  it('a call taken by a1 is refused by a1 restarted on its port, which takes new calls', async () => {
    const captured = stage(a1.url, 'a1', 's2');
    expect((await send(a1.url, captured)).status).toBe(200);
    const port = Number(new URL(a1.url).port);
    await closed(a1.child);
    a1 = await agent('a1', port); // a new process on the same port
    await new Promise((resolve) => setTimeout(resolve, AGENT_MAX_AHEAD_MS));
    const replayed = await send(a1.url, captured);
    expect(replayed.status).toBe(401);
    expect(replayed.message).toContain('before this receiver takes requests');
    expect((await send(a1.url, stage(a1.url, 'a1', 's3'))).status).toBe(200);
  });
});
