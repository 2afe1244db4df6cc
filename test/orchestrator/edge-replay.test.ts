/**
 * Issue 41, point 6: a signed request captured on its way to one receiver and sent to another, or
 * to the same one restarted (docs/security.md, "Signed requests"). Two orchestrators in this
 * process on one replicated swarm over a real nats-server, a lone orchestrator, and two agents,
 * all on real sockets. The captured requests are signed here exactly as an agent or the
 * orchestrator signs them (signedHeaders), and sent byte for byte again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MAX_AHEAD_MS } from '../../src/agent/stage-guard.js';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { loadAgentKey, type AgentKey } from '../../src/wire/agent-key.js';
import { DROP_PATH } from '../../src/wire/drop-protocol.js';
import { FRAME_CONTENT_TYPE } from '../../src/wire/frames.js';
import { agentAudience } from '../../src/wire/request-signing.js';
import { signedHeaders } from '../../src/wire/signed-headers.js';
import { stageMessage } from '../agent/stage-messages.js';
import { freePort, NatsServer } from '../replication/nats-server.js';
import { audienceOf } from './edge-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-replay-'));
const secret = Buffer.from('5'.repeat(64));
const models = [{ id: 'base', kind: 'base' as const, layers: 4, pipelines: 1 }];
let nats: NatsServer;
let key: AgentKey;
const running: { close?: () => Promise<void>; stop?: () => Promise<void> }[] = [];

beforeAll(async () => {
  nats = await NatsServer.start();
  key = loadAgentKey(join(dir, 'a4.json'), 'a4').key;
}, 30_000);

afterAll(async () => {
  for (const r of running.reverse()) await (r.close ?? r.stop)?.().catch(() => {});
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** A request as captured: where it went, its headers and body. */
interface Captured {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string | Uint8Array;
}

/** Closes `o`, and lets this process's pooled connections to it see they are closed (the next start takes its port). */
async function closed(o: RunningOrchestrator): Promise<void> {
  await o.close();
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
    const options = { models, nodes: [{ id: 'a4', memoryGb: 8, score: 2 }], replication: { servers: [nats.url], swarm: `replay${process.pid}` } };
    const a = await startOrchestrator({ ...options, auth: { secret, bindingsFile: join(dir, 'a.json') } });
    running.push(a);
    const bPort = await freePort();
    let b = await startOrchestrator({ ...options, port: bPort, auth: { secret, bindingsFile: join(dir, 'b.json') } });
    running.push(b);
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

    // B restarted: the nonces live in the swarm's bucket, not in B.
    await closed(b);
    b = await startOrchestrator({ ...options, port: bPort, auth: { secret, bindingsFile: join(dir, 'b.json') } });
    running.push(b);
    for (const captured of [oldJoin, leave, beat]) expect((await send(b.url, captured)).status).toBe(401);

    // A lone orchestrator with the same secret: signed for another receiver.
    const lone = await startOrchestrator({ models, nodes: [{ id: 'a4', memoryGb: 8, score: 2 }], auth: { secret, bindingsFile: join(dir, 'lone.json') } });
    running.push(lone);
    const elsewhere = await send(lone.url, await member(a.url, '/v1/nodes', { id: 'a4', memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' }));
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.message).toContain(`signed for "swarm/replay${process.pid}"`);
  }, 60_000);

  it('a lone orchestrator restarted refuses what its last run took (its audience is new each start)', async () => {
    const port = await freePort();
    const options = { models, port, nodes: [{ id: 'a4', memoryGb: 8, score: 2 }], auth: { secret, bindingsFile: join(dir, 'restarted.json') } };
    let o = await startOrchestrator(options);
    running.push(o);
    const first = await audienceOf(o.url);
    const joined = await member(o.url, '/v1/nodes', { id: 'a4', memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' });
    expect((await send(o.url, joined)).status).toBe(200);
    await closed(o);
    o = await startOrchestrator(options);
    running.push(o);
    expect(await audienceOf(o.url)).not.toBe(first);
    const replayed = await send(o.url, joined);
    expect(replayed.status).toBe(401);
    expect(replayed.message).toContain('not for this receiver');
  }, 30_000);
});

describe('orchestrator calls replayed to another agent, or to the agent restarted', () => {
  let a1: RunningAgent;
  let a2: RunningAgent;
  const agent = async (id: string, port?: number) => {
    const started = await startAgent({ id, memoryGb: 8, score: 1, join: `http://127.0.0.1:${await freePort()}`, perLayerMs: 0, jitter: 0, auth: { secret, key: loadAgentKey(join(dir, `${id}.json`), id).key }, ...(port !== undefined ? { port } : {}) });
    running.push(started);
    return started;
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
    await a1.stop();
    a1 = await agent('a1', port);
    await new Promise((resolve) => setTimeout(resolve, AGENT_MAX_AHEAD_MS));
    const replayed = await send(a1.url, captured);
    expect(replayed.status).toBe(401);
    expect(replayed.message).toContain('before this receiver takes requests');
    expect((await send(a1.url, stage(a1.url, 'a1', 's3'))).status).toBe(200);
  });
});
