/**
 * With `--nats`, an agent id's key binding is the swarm's, not one orchestrator's (docs/security.md,
 * "NATS"): two orchestrators in this process on one replicated swarm and a real nats-server; the
 * agent joins one, an impostor holding the swarm secret but another key tries the other and is
 * refused (409) for its join, heartbeat and leave; the admin call on either frees the id on both;
 * two first joins of a new id with two keys at once, one on each orchestrator, bind one key. A
 * directory entry a plain NATS client forges is not taken.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idToKey } from '../../src/replication/agent-directory.js';
import type { ReplicatedSwarm } from '../../src/replication/index.js';
import { loadAgentKey, type AgentKey } from '../../src/wire/agent-key.js';
import { signedHeaders, type RequestSigner } from '../../src/wire/signed-headers.js';
import { audienceOf } from './edge-helpers.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { NatsServer } from '../replication/nats-server.js';
import { until } from '../replication/replicas.js';
import { parseMetrics } from './processes.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-rbind-'));
const secret = Buffer.from('9'.repeat(64));
const operatorToken = Buffer.from('7'.repeat(64));
let nats: NatsServer;
let a: RunningOrchestrator;
let b: RunningOrchestrator;
let agentKey: AgentKey;
let impostorKey: AgentKey;

beforeAll(async () => {
  nats = await NatsServer.start();
  const options = {
    models: [{ id: 'base', kind: 'base' as const, layers: 4, pipelines: 1 }],
    nodes: [{ id: 'a1', memoryGb: 8, score: 2 }],
    replication: { servers: [nats.url], swarm: 'bindings' },
  };
  a = await startOrchestrator({ ...options, auth: { secret, operatorToken, bindingsFile: join(dir, 'a-bindings.json') } });
  b = await startOrchestrator({ ...options, auth: { secret, operatorToken, bindingsFile: join(dir, 'b-bindings.json') } });
  agentKey = loadAgentKey(join(dir, 'a1.json'), 'a1').key;
  impostorKey = loadAgentKey(join(dir, 'impostor.json'), 'a1').key;
}, 30_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

async function send(url: string, body: unknown, signer: RequestSigner, method = 'POST'): Promise<{ status: number; body: any }> {
  const text = JSON.stringify(body);
  const response = await fetch(url, { method, headers: { 'content-type': 'application/json', ...signedHeaders(signer, method, url, text, Date.now(), await audienceOf(url)) }, body: text });
  return { status: response.status, body: await response.json() };
}
const join1 = (o: RunningOrchestrator, key: AgentKey, id = 'a1') => send(`${o.url}/v1/nodes`, { id, memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' }, { secret, key });
const keyOf = (o: RunningOrchestrator, id: string) => (o.swarm() as ReplicatedSwarm).keyOf(id);

describe('replicated key bindings (two orchestrators, one swarm over NATS)', () => {
  it('refuses an impostor on the orchestrator its agent did not join; the operator\'s call on one frees the id on both', async () => {
    expect((await join1(a, agentKey)).status).toBe(200);
    await until(() => keyOf(b, 'a1') === agentKey.publicKey, 'b to hold a1\'s binding');
    const impostor = { secret, key: impostorKey };
    const refused = await join1(b, impostorKey);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'KeyMismatch', field: 'id' });
    expect((await send(`${b.url}/v1/nodes/a1/heartbeat`, {}, impostor)).status).toBe(409);
    expect((await send(`${b.url}/v1/nodes/a1/leave`, {}, impostor)).status).toBe(409);
    expect((await send(`${b.url}/v1/nodes/a1/heartbeat`, {}, { secret, key: agentKey })).status).toBe(200);
    expect(b.swarm()?.node('a1')?.state).toBe('alive');

    expect((await fetch(`${b.url}/v1/nodes/a1/key`, { method: 'DELETE', headers: { authorization: `Bearer ${secret.toString()}` } })).status).toBe(401); // a member's credential
    const freed = await fetch(`${b.url}/v1/nodes/a1/key`, { method: 'DELETE', headers: { authorization: `Bearer ${operatorToken.toString()}` } });
    expect(await freed.json()).toEqual({ id: 'a1', removed: true });
    await until(() => keyOf(a, 'a1') === undefined, 'a to apply the unbind');
    // Freed, the next join binds again, on whichever orchestrator it reaches, for both.
    expect((await join1(a, impostorKey)).status).toBe(200);
    await until(() => keyOf(b, 'a1') === impostorKey.publicKey, 'b to hold the new binding');
    expect((await join1(b, agentKey)).status).toBe(409);
  });

  it('binds one key when two first joins of a new id with two keys race on two orchestrators', async () => {
    const k1 = loadAgentKey(join(dir, 'a2-one.json'), 'a2').key;
    const k2 = loadAgentKey(join(dir, 'a2-two.json'), 'a2').key;
    const [one, two] = await Promise.all([join1(a, k1, 'a2'), join1(b, k2, 'a2')]);
    expect([one.status, two.status].sort()).toEqual([200, 409]);
    const winner = one.status === 200 ? k1 : k2;
    await until(() => keyOf(a, 'a2') === winner.publicKey && keyOf(b, 'a2') === winner.publicKey, 'both to hold the winner');
  });

  it('does not take a directory entry a plain NATS client forges (it would point an agent\'s traffic elsewhere)', async () => {
    const before = ((await (await fetch(`${b.url}/v1/status`)).json()) as any).nodes.find((n: { id: string }) => n.id === 'a2').url;
    const nc = await connect({ servers: nats.url });
    try {
      const kv = await new Kvm(nc).open('hecate-bindings-agents');
      await kv.put(idToKey('a2'), JSON.stringify({ profile: { id: 'a2', memoryGb: 8, score: 2 }, url: 'http://127.0.0.1:6666' }));
    } finally {
      await nc.close();
    }
    let rejected = 0;
    for (let i = 0; i < 100 && rejected === 0; i++) {
      const metrics = parseMetrics(await (await fetch(`${b.url}/metrics`)).text());
      rejected = [...metrics].find(([name]) => name.startsWith('hecate_replication_rejected{') && name.includes('kind="message"'))?.[1] ?? 0;
      if (rejected === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(rejected).toBeGreaterThanOrEqual(1);
    const after = ((await (await fetch(`${b.url}/v1/status`)).json()) as any).nodes.find((n: { id: string }) => n.id === 'a2').url;
    expect(after).toBe(before);
    expect(after).not.toBe('http://127.0.0.1:6666');
  });

  it('counts a forged heartbeat once in hecate_replication_rejected{kind="message"} (the directory and the log stream both read it)', async () => {
    const count = async () => [...parseMetrics(await (await fetch(`${b.url}/metrics`)).text())].find(([name]) => name.startsWith('hecate_replication_rejected{') && name.includes('kind="message"'))?.[1] ?? 0;
    const before = await count();
    const nc = await connect({ servers: nats.url });
    try {
      nc.publish('hecate.bindings.hb', JSON.stringify({ id: 'a2', at: Date.now(), sig: 'forged' }));
      await nc.flush();
    } finally {
      await nc.close();
    }
    for (let i = 0; i < 200 && (await count()) === before; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300)); // a second count would come now
    expect(await count()).toBe(before + 1);
  });
});
