/**
 * Membership needs the swarm secret and an id belongs to its agent's key (docs/security.md), with
 * real `hecate-node serve` and `agent` processes on 127.0.0.1 and an impostor that holds the swarm
 * secret but not the agent's key.
 */
import { postStage } from '../agent/stage-messages.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentKey, type AgentKey } from '../../src/wire/agent-key.js';
import { signedHeaders, type RequestSigner } from '../../src/wire/signed-headers.js';
import { audienceOf } from './edge-helpers.js';
import { ensureSecretFile } from '../../src/net/secret-file.js';
import { expectedDigest } from '../../src/wire/digest.js';
import { startCli, stopAll, waitFor, type Child } from './processes.js';

const dir = mkdtempSync(join(tmpdir(), 'hecate-trust-'));
const tokenFile = join(dir, 'swarm-token');
const operatorFile = join(dir, 'operator-token');
const serveArgs = ['serve', '--port', '0', '--layers', '4', '--pipelines', '1', '--token-file', tokenFile, '--operator-token-file', operatorFile];
let serveUrl = '';
let serve: Child;
let a1: Child;
let a1Url = '';
let secret: Buffer;
let impostorKey: AgentKey;
/** A stage server the impostor points a1's traffic at; it counts what reaches it. */
let decoy: Server;
let decoyUrl = '';
let decoyHits = 0;

beforeAll(async () => {
  decoy = createServer((_request, response) => {
    decoyHits++;
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"output":1}');
  });
  await new Promise<void>((resolve) => decoy.listen(0, '127.0.0.1', resolve));
  decoyUrl = `http://127.0.0.1:${(decoy.address() as { port: number }).port}`;
  const started = await startCli('serve', serveArgs, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true });
  serve = started.child;
  serveUrl = started.match;
  const agent = await startCli('a1', ['agent', '--id', 'a1', '--memory', '8', '--score', '2', '--per-layer-ms', '0.5', '--join', serveUrl, '--token-file', tokenFile, '--state-file', join(dir, 'a1.json')], /listening on (http:\/\/\S+),/);
  a1 = agent.child;
  a1Url = agent.match;
  secret = Buffer.from(readFileSync(tokenFile, 'utf8').trim());
  impostorKey = loadAgentKey(join(dir, 'impostor.json'), 'a1').key;
  await waitFor('a1 alive', async () => ((await status()).nodes.find((n: { id: string; state: string }) => n.id === 'a1' && n.state === 'alive') !== undefined ? true : undefined), 20_000);
}, 60_000);

afterAll(async () => {
  await stopAll();
  decoy.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `GET /v1/status` as the operator sees it (agents' URLs included). */
const status = async (): Promise<any> => (await fetch(`${serveUrl}/v1/status`, { headers: { authorization: `Bearer ${readFileSync(operatorFile, 'utf8').trim()}` } })).json();

/** POSTs `body` to `url`, signed by `signer` (unsigned without). */
async function send(url: string, body: unknown, signer?: RequestSigner, method = 'POST'): Promise<{ status: number; body: any }> {
  const text = body === undefined ? '' : JSON.stringify(body);
  const headers = { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(signer !== undefined ? signedHeaders(signer, method, url, text, Date.now(), await audienceOf(url)) : {}) };
  const response = await fetch(url, { method, headers, ...(body !== undefined ? { body: text } : {}) });
  return { status: response.status, body: await response.json() };
}

const generate = () => send(`${serveUrl}/v1/generate`, { model: 'base', prompt: 'hi', steps: 3 });
const hijack = { id: 'a1', memoryGb: 8, score: 100, url: '' };

describe('the swarm secret and agent keys (real processes)', () => {
  it('refuses a hijack of a1 by a key that is not a1\'s (409), whatever the URL; traffic stays on a1', async () => {
    const before = await generate();
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ digest: expectedDigest(4, 'hi', 3), path: [{ nodeId: 'a1' }] });

    const impostor = { secret, key: impostorKey };
    const join = await send(`${serveUrl}/v1/nodes`, { ...hijack, url: decoyUrl }, impostor);
    expect(join.status).toBe(409);
    expect(join.body.error).toMatchObject({ code: 'KeyMismatch', field: 'id' });
    expect(join.body.error.message).toContain('agent "a1" is bound to another key');
    expect((await send(`${serveUrl}/v1/nodes`, { ...hijack, url: a1Url }, impostor)).status).toBe(409);
    expect((await send(`${serveUrl}/v1/nodes/a1/heartbeat`, {}, impostor)).status).toBe(409);
    expect((await send(`${serveUrl}/v1/nodes/a1/leave`, {}, impostor)).status).toBe(409);

    const node = (await status()).nodes.find((n: { id: string }) => n.id === 'a1');
    expect(node).toMatchObject({ url: a1Url, state: 'alive', joins: 1 });
    const after = await generate();
    expect(after.body).toMatchObject({ digest: expectedDigest(4, 'hi', 3), path: [{ nodeId: 'a1' }] });
    expect(decoyHits).toBe(0);
  });

  it('refuses joins, heartbeats and leaves not signed with the swarm secret or not by an agent key (401)', async () => {
    const unsigned = await send(`${serveUrl}/v1/nodes`, { ...hijack, url: decoyUrl });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.error).toMatchObject({ code: 'Unauthenticated', field: 'headers' });
    const wrongSecret = { secret: Buffer.from('f'.repeat(64)), key: impostorKey };
    expect((await send(`${serveUrl}/v1/nodes`, { ...hijack, id: 'x9', url: decoyUrl }, wrongSecret)).status).toBe(401);
    // The secret without an agent key: no id can be joined, heartbeated or left.
    const secretOnly = await send(`${serveUrl}/v1/nodes`, { ...hijack, id: 'x9', url: decoyUrl }, { secret });
    expect(secretOnly.status).toBe(401);
    expect(secretOnly.body.error.message).toContain('not signed by the agent\'s key');
    expect((await send(`${serveUrl}/v1/nodes/a1/heartbeat`, {})).status).toBe(401);
    expect((await send(`${serveUrl}/v1/nodes/a1/leave`, {})).status).toBe(401);
    // Signed by another key than a1's: refused from its headers, before its body is read.
    const body = JSON.stringify({});
    const headers = { 'content-type': 'application/json', ...signedHeaders({ secret, key: impostorKey }, 'POST', `${serveUrl}/v1/nodes/a1/heartbeat`, body, Date.now(), await audienceOf(serveUrl)) };
    expect((await fetch(`${serveUrl}/v1/nodes/a1/heartbeat`, { method: 'POST', headers, body })).status).toBe(409);
    // A signed request replayed as is: refused for its nonce (the first time its swarm signature
    // held and the key's did not: the key signs as a1, not x8).
    const stray = { 'content-type': 'application/json', ...signedHeaders({ secret, key: impostorKey }, 'POST', `${serveUrl}/v1/nodes/x8/heartbeat`, body, Date.now(), await audienceOf(serveUrl)) };
    const first = await fetch(`${serveUrl}/v1/nodes/x8/heartbeat`, { method: 'POST', headers: stray, body });
    expect(first.status).toBe(401);
    expect(((await first.json()) as any).error.message).toContain('does not verify');
    const replay = await fetch(`${serveUrl}/v1/nodes/x8/heartbeat`, { method: 'POST', headers: stray, body });
    expect(replay.status).toBe(401);
    expect(((await replay.json()) as any).error.message).toContain('already used');
    expect((await status()).nodes.map((n: { id: string }) => n.id)).toEqual(['a1']);
    expect(decoyHits).toBe(0);
  });

  it('an agent with another swarm secret is refused (401) and exits 2 saying so', async () => {
    const otherToken = join(dir, 'other-swarm-token');
    ensureSecretFile(otherToken);
    const { child } = await startCli('a9', ['agent', '--id', 'a9', '--memory', '8', '--score', '1', '--join', serveUrl, '--token-file', otherToken, '--state-file', join(dir, 'a9.json')], /listening on (http:\/\/\S+),/);
    expect(await child.exited).toBe('exit 2');
    expect(child.stderr()).toMatch(/the orchestrator refused the join: 401 .*"code":"Unauthenticated".*the signature does not match/);
    expect((await status()).nodes.map((n: { id: string }) => n.id)).toEqual(['a1']);
  });

  it('an agent refuses stage calls not signed with the swarm secret (401) and serves signed ones', async () => {
    const call = { sessionId: 's-trust', modelId: 'base', layerStart: 0, layerEnd: 2, step: 0, fresh: true, tokens: 1, input: 7, replay: [] };
    const unsigned = await postStage(`${a1Url}/v1/stage`, call);
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.error).toMatchObject({ code: 'Unauthenticated' });
    expect((await postStage(`${a1Url}/v1/stage`, call, Buffer.from('f'.repeat(64)))).status).toBe(401);
    const signed = await postStage(`${a1Url}/v1/stage`, call, secret);
    expect(signed.status).toBe(200);
    expect(signed.body).toMatchObject({ nodeId: 'a1', layerStart: 0, layerEnd: 2 });
    // Its reply is signed too, bound to the request: the reply headers are there.
    expect(signed.headers.get('x-hecate-reply-signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('keeps a1\'s key binding after it leaves; only the operator\'s call (the operator token, not the swarm secret) frees the id', async () => {
    a1.process.kill('SIGTERM');
    await a1.exited;
    await waitFor('a1 left', async () => ((await status()).nodes.find((n: { id: string; state: string }) => n.id === 'a1' && n.state === 'left') !== undefined ? true : undefined), 10_000);
    const impostor = { secret, key: impostorKey };
    expect((await send(`${serveUrl}/v1/nodes`, { ...hijack, url: decoyUrl }, impostor)).status).toBe(409);

    const admin = `${serveUrl}/v1/nodes/a1/key`;
    expect((await fetch(admin, { method: 'DELETE' })).status).toBe(401);
    expect((await fetch(admin, { method: 'DELETE', headers: { authorization: `Bearer ${'f'.repeat(64)}` } })).status).toBe(401);
    expect((await fetch(admin, { method: 'DELETE', headers: { authorization: `Bearer ${secret.toString()}` } })).status).toBe(401); // a member's credential
    const freed = await fetch(admin, { method: 'DELETE', headers: { authorization: `Bearer ${readFileSync(operatorFile, 'utf8').trim()}` } });
    expect(freed.status).toBe(200);
    expect(await freed.json()).toEqual({ id: 'a1', removed: true });
    // Freed: the next signed join binds the id to its key.
    expect((await send(`${serveUrl}/v1/nodes`, { ...hijack, url: decoyUrl }, impostor)).status).toBe(200);
    expect((await send(`${serveUrl}/v1/nodes/a1/heartbeat`, {}, impostor)).status).toBe(200);
  });

  it('keeps the bindings across a restart of the orchestrator (key-bindings.json beside the token file)', async () => {
    serve.process.kill('SIGTERM');
    await serve.exited;
    expect(JSON.parse(readFileSync(join(dir, 'key-bindings.json'), 'utf8'))).toEqual({ bindings: { a1: impostorKey.publicKey } });
    serveUrl = (await startCli('serve again', serveArgs, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true })).match;
    // a1 is now the key the admin let bind it: the original agent's key is refused after the restart.
    const original = loadAgentKey(join(dir, 'a1.json'), 'a1').key;
    const refused = await send(`${serveUrl}/v1/nodes`, { ...hijack, url: decoyUrl }, { secret, key: original });
    expect(refused.status).toBe(409);
    expect((await send(`${serveUrl}/v1/nodes`, { ...hijack, url: decoyUrl }, { secret, key: impostorKey })).status).toBe(200);
  });
});

describe('serve --client-token-file (real process)', () => {
  it('answers POST /v1/generate only with the client token as a bearer', async () => {
    const clientFile = join(dir, 'client-token');
    const url = (await startCli('serve-client', ['serve', '--port', '0', '--token-file', join(dir, 'other-token'), '--client-token-file', clientFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true })).match;
    const token = readFileSync(clientFile, 'utf8').trim();
    const ask = (authorization?: string) => fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization !== undefined ? { authorization } : {}) }, body: JSON.stringify({ model: 'base', prompt: 'hi', steps: 1 }) });
    const none = await ask();
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error).toMatchObject({ code: 'Unauthenticated', field: 'authorization' });
    expect((await ask(`Bearer ${token}x`)).status).toBe(401);
    expect((await ask(`Bearer ${token.slice(1)}`)).status).toBe(401);
    // With the token it reaches the swarm: none yet (no agent), 503.
    const right = await ask(`Bearer ${token}`);
    expect(right.status).toBe(503);
    expect(((await right.json()) as any).error.code).toBe('NoSwarm');
  });
});
