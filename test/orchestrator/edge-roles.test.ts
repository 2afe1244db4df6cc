/**
 * Roles at the edge, on a real `hecate-node serve` and agent (docs/security.md, "Roles"): the
 * swarm secret every agent holds is a member's credential, not the operator's. From an agent's
 * seat (the secret and a key of its own) the issue's attack — free a1's binding, join as a1 with
 * another key at another URL — is refused and a1 keeps its URL; only the operator token frees an
 * id or removes members (by id, by pattern); an id's own key may free its binding; a client's
 * `/v1/status` names no agent's address; new ids from many loopback addresses share one bucket.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedHeaders, type RequestSigner } from '../../src/wire/signed-headers.js';
import { collectEvents, stopAll, waitFor, type ReceivedEvent } from './processes.js';
import { audienceOf, freshKey, member, postJson, removeServeDirs, startAgentCli, startServe, statusNodes, type StartedServe } from './edge-helpers.js';

let serve: StartedServe;
let a1Url = '';

beforeAll(async () => {
  serve = await startServe('serve roles', ['--layers', '4', '--pipelines', '1']);
  a1Url = (await startAgentCli('a1', serve, 8, 2)).url;
  await waitFor('a1 alive', async () => ((await statusNodes(serve.url)).get('a1')?.state === 'alive' ? true : undefined), 20_000, 50);
}, 60_000);

afterAll(async () => {
  await stopAll();
  removeServeDirs();
});

const bearer = (token: string | Buffer) => ({ authorization: `Bearer ${token.toString()}` });
const del = async (path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> => {
  const response = await fetch(`${serve.url}${path}`, { method: 'DELETE', headers });
  return { status: response.status, body: await response.json() };
};
/** A DELETE signed like a member's request (the swarm secret's HMAC and the agent's key). */
const signedDelete = async (path: string, signer: RequestSigner) => del(path, signedHeaders(signer, 'DELETE', `${serve.url}${path}`, '', Date.now(), await audienceOf(serve.url)));
const profile = (id: string, url: string) => ({ id, memoryGb: 6, score: 1, url });
/** POSTs `body` from local address `address` (any of 127/8 on loopback); resolves with the status. */
const postFrom = (address: string, url: string, headers: Record<string, string>, body: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const sent = request(url, { method: 'POST', headers, localAddress: address }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    sent.on('error', reject);
    sent.end(body);
  });

describe('the swarm secret is a member credential, not the operator\'s', () => {
  it('from an agent\'s seat, a1\'s binding cannot be freed and a1 cannot be joined at another URL (the issue\'s attack)', async () => {
    const seat = member(serve, 'a1'); // the swarm secret every agent holds, and a key of its own
    const byBearer = await del('/v1/nodes/a1/key', bearer(serve.secret));
    expect(byBearer.status).toBe(401);
    expect(byBearer.body.error.message).toContain('not the operator');
    expect((await signedDelete('/v1/nodes/a1/key', seat)).status).toBe(409); // signed, but a1 is bound to another key
    expect((await del('/v1/nodes/a1/key', signedHeaders({ secret: serve.secret }, 'DELETE', `${serve.url}/v1/nodes/a1/key`, '', Date.now(), await audienceOf(serve.url)))).status).toBe(401);
    const rejoin = await postJson(`${serve.url}/v1/nodes`, profile('a1', 'http://127.0.0.1:9'), seat);
    expect(rejoin.status).toBe(409);
    expect(rejoin.body.error.code).toBe('KeyMismatch');
    // A heartbeat signed by another key changes nothing either.
    expect((await postJson(`${serve.url}/v1/nodes/a1/heartbeat`, {}, seat)).status).toBe(409);
    const a1 = (await statusNodes(serve.url, serve.operatorToken)).get('a1');
    expect(a1).toMatchObject({ state: 'alive', url: a1Url });
  });

  it('shows a client no agent\'s address, in /v1/status and /v1/events; the operator sees them', async () => {
    expect((await statusNodes(serve.url)).get('a1')?.url).toBeNull();
    expect((await statusNodes(serve.url, serve.secret.toString())).get('a1')?.url).toBeNull();
    expect((await statusNodes(serve.url, serve.operatorToken)).get('a1')?.url).toBe(a1Url);
    const stop = new AbortController();
    const asClient: ReceivedEvent[] = [];
    const asOperator: ReceivedEvent[] = [];
    try {
      await collectEvents(`${serve.url}/v1/events`, asClient, stop.signal);
      await collectEvents(`${serve.url}/v1/events`, asOperator, stop.signal, bearer(serve.operatorToken));
      expect((await postJson(`${serve.url}/v1/nodes`, profile('ev1', 'http://127.0.0.1:9'), member(serve, 'ev1'))).status).toBe(200);
      const joined = (events: ReceivedEvent[]) => waitFor('node.joined of ev1', () => events.find((e) => e.type === 'node.joined' && e.data['nodeId'] === 'ev1'), 5000, 20);
      expect((await joined(asClient)).data['url']).toBeNull();
      expect((await joined(asOperator)).data['url']).toBe('http://127.0.0.1:9');
      const a1In = (events: ReceivedEvent[]) => (events.find((e) => e.type === 'hello')?.data['nodes'] as { id: string; url: string | null }[]).find((n) => n.id === 'a1')?.url;
      expect(a1In(asClient)).toBeNull();
      expect(a1In(asOperator)).toBe(a1Url);
    } finally {
      stop.abort();
    }
  });

  it('lets an id\'s own key free its binding, and the operator free any; nobody else', async () => {
    const own = member(serve, 'self1');
    expect((await postJson(`${serve.url}/v1/nodes`, profile('self1', 'http://127.0.0.1:9'), own)).status).toBe(200);
    expect(await signedDelete('/v1/nodes/self1/key', own)).toEqual({ status: 200, body: { id: 'self1', removed: true } });
    const other = member(serve, 'self2');
    expect((await postJson(`${serve.url}/v1/nodes`, profile('self2', 'http://127.0.0.1:9'), other)).status).toBe(200);
    expect((await del('/v1/nodes/self2/key', bearer('f'.repeat(64)))).status).toBe(401);
    expect(await del('/v1/nodes/self2/key', bearer(serve.operatorToken))).toEqual({ status: 200, body: { id: 'self2', removed: true } });
  });

  it('only the operator removes members, by id and by pattern', async () => {
    for (const id of ['fake-1', 'fake-2', 'fake-3', 'keep-1']) expect((await postJson(`${serve.url}/v1/nodes`, profile(id, 'http://127.0.0.1:9'), member(serve, id))).status).toBe(200);
    expect((await del('/v1/nodes?pattern=fake-*', bearer(serve.secret))).status).toBe(401);
    expect((await del('/v1/nodes/keep-1', bearer(serve.secret))).status).toBe(401);
    const bad = await del('/v1/nodes?pattern=fake-(', bearer(serve.operatorToken));
    expect(bad.status, JSON.stringify(bad.body)).toBe(400);
    const byPattern = await del('/v1/nodes?pattern=fake-*', bearer(serve.operatorToken));
    expect(byPattern.status).toBe(200);
    expect(byPattern.body.removed.map((r: { id: string }) => r.id)).toEqual(['fake-1', 'fake-2', 'fake-3']);
    expect((await del('/v1/nodes/keep-1', bearer(serve.operatorToken))).body.removed).toEqual([{ id: 'keep-1', how: expect.any(String) }]);
    expect((await del('/v1/nodes/keep-1', bearer(serve.operatorToken))).status).toBe(404);
    const nodes = await statusNodes(serve.url);
    expect([...nodes.keys()].filter((id) => id.startsWith('fake-') || id === 'keep-1')).toEqual([]);
    expect(nodes.get('a1')?.state).toBe('alive');
    // A removed id stays bound to its key: another key cannot take it.
    expect((await postJson(`${serve.url}/v1/nodes`, profile('fake-1', 'http://127.0.0.1:9'), member(serve, 'fake-1'))).status).toBe(409);
  });
});

describe('new ids from one box', () => {
  it('count in one bucket whichever loopback address they come from (40 addresses: 30 admitted, then 429)', async () => {
    const flooded = await startServe('serve flood', ['--layers', '4', '--pipelines', '1']);
    const statuses: number[] = [];
    const audience = await audienceOf(flooded.url);
    const url = `${flooded.url}/v1/nodes`;
    // Signed first, so the 40 joins go out back to back (the bucket refills 1 a second).
    const joins = Array.from({ length: 40 }, (_, i) => {
      const address = `127.0.1.${2 + i}`;
      const id = `flood-${i}`;
      const body = JSON.stringify(profile(id, `http://${address}:9`));
      return { address, body, headers: { 'content-type': 'application/json', ...signedHeaders({ secret: flooded.secret, key: freshKey(id) }, 'POST', url, body, Date.now(), audience) } };
    });
    const started = Date.now();
    for (const { address, headers, body } of joins) statuses.push(await postFrom(address, url, headers, body));
    // 30 at once, then one a second: a slow machine's 40 joins may still see a token refill.
    const refilled = Math.floor((Date.now() - started) / 1000);
    const admitted = statuses.filter((s) => s === 200).length;
    expect(admitted, JSON.stringify(statuses)).toBeGreaterThanOrEqual(30);
    expect(admitted, JSON.stringify(statuses)).toBeLessThanOrEqual(30 + refilled);
    expect(statuses.slice(0, 30)).toEqual(Array<number>(30).fill(200));
    expect(statuses.slice(30).filter((s) => s !== 200 && s !== 429)).toEqual([]);
  });
});

