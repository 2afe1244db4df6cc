/**
 * Joins at the edge, on a real `hecate-node serve`: a join URL is scheme, host and port on the
 * joiner's own address (no SSRF through a path, a query, credentials or another host), joins of
 * new ids are rate-limited per source while known ids are not, the membership has a maximum, an
 * id that joined and never heartbeats is forgotten (removed, not kept down), and `/v1/status`
 * stays bounded and paged. The flood is scaled down from the 2,000 fake ids to 300: the
 * limiter admits 30 at once whatever the total.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJoinUrl } from '../../src/orchestrator/join-guard.js';
import { DEFAULT_MAX_NODES } from '../../src/orchestrator/join-edge.js';
import { TOPOLOGY_LIMITS } from '../../src/sim/topology.js';
import { parseMetrics, stopAll, waitFor } from './processes.js';
import { agentKeyOf, member, postJson, removeServeDirs, rssMb, startAgentCli, startServe, statusNodes, type StartedServe } from './edge-helpers.js';

let recorder: Server;
let recorded: string[] = [];
let recorderPort = 0;

beforeAll(async () => {
  recorder = createServer((request, response) => {
    recorded.push(`${request.method} ${request.url}`);
    request.resume();
    response.writeHead(200).end('{}');
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  recorderPort = (recorder.address() as { port: number }).port;
});

afterAll(async () => {
  await stopAll();
  await new Promise((resolve) => recorder.close(resolve));
  removeServeDirs();
});

const profile = (id: string, url: string) => ({ id, memoryGb: 6, score: 1, url });
/**
 * A join of `id` at `url` by a member of `serve`'s swarm: signed with the swarm secret and by a key
 * of its own (the same for every join of one id), so the edge's checks are what answers.
 */
const keys = new Map<string, ReturnType<typeof member>>();
/** The ids bound to a key, from serve's bindings file (key-bindings.json beside its token file). */
function boundIds(serve: StartedServe): string[] {
  return Object.keys((JSON.parse(readFileSync(join(serve.dir, 'key-bindings.json'), 'utf8')) as { bindings: Record<string, string> }).bindings);
}
function joinAs(serve: StartedServe, id: string, url: string) {
  const signer = keys.get(`${serve.url} ${id}`) ?? member(serve, id);
  keys.set(`${serve.url} ${id}`, signer);
  return postJson(`${serve.url}/v1/nodes`, profile(id, url), signer);
}

describe('a join URL', () => {
  it('with a path, a query or a fragment, credentials or another host is refused (400 url), and nothing is called there', async () => {
    const serve = await startServe('serve ssrf', []);
    const base = `http://127.0.0.1:${recorderPort}`;
    for (const url of [`${base}/internal/admin?x=1#`, `${base}/internal/admin`, `${base}/?`, `${base}#`, `http://user:pw@127.0.0.1:${recorderPort}`, `http://10.1.2.3:${recorderPort}`, `http://localhost:${recorderPort}`, `ftp://127.0.0.1:${recorderPort}`]) {
      const r = await joinAs(serve, 's1', url);
      expect(r.status, url).toBe(400);
      expect(r.body.error.field, url).toBe('url');
    }
    // Scheme, host and port of its own address: believed.
    const ok = await joinAs(serve, 's1', base);
    expect(ok.status).toBe(200);
    expect(ok.body.models).toEqual([{ id: 'base', layers: 12 }]);
    const metrics = parseMetrics(await (await fetch(`${serve.url}/metrics`)).text());
    expect(metrics.get('hecate_node_joins_refused_total{reason="url"}')).toBe(7); // ftp:// is the schema's refusal
    expect(boundIds(serve)).toEqual(['s1']);
    expect(recorded.filter((r) => r.includes('internal'))).toEqual([]);
  });

  it('may name a host of --agent-hosts', async () => {
    const serve = await startServe('serve hosts', ['--agent-hosts', '10.1.2.3,agents.example']);
    expect((await joinAs(serve, 'h1', 'http://10.1.2.3:9000')).status).toBe(200);
    expect((await joinAs(serve, 'h2', 'http://agents.example:9000')).status).toBe(200);
    expect((await joinAs(serve, 'h3', 'http://10.9.9.9:9000')).status).toBe(400);
    expect(boundIds(serve)).toEqual(['h1', 'h2']); // a refused join binds no key to its id
  });
});

describe('the first joins of a new id', () => {
  it('sent at once by two keys: one binds the id (200), the other is refused (409), the node at the winner\'s URL', async () => {
    const serve = await startServe('serve twins', []);
    const own = `http://127.0.0.1:${recorderPort}`;
    const answers = await Promise.all([member(serve, 'twin'), member(serve, 'twin')].map((signer) => postJson(`${serve.url}/v1/nodes`, profile('twin', own), signer)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect(answers.find((a) => a.status === 409)?.body.error).toMatchObject({ code: 'KeyMismatch', field: 'id' });
    expect(boundIds(serve)).toEqual(['twin']);
    expect((await statusNodes(serve.url, serve.operatorToken)).get('twin')?.url).toBe(own);
    // A client (no operator token) is not shown where agents listen.
    expect((await statusNodes(serve.url)).get('twin')?.url).toBeNull();
  });
});

describe('checkJoinUrl', () => {
  it('reduces a URL to scheme://host:port and compares IPv4-mapped addresses as IPv4', () => {
    expect(checkJoinUrl('http://127.0.0.1:8080/', '::ffff:127.0.0.1')).toBe('http://127.0.0.1:8080');
    expect(checkJoinUrl('https://[::1]:8443', '::1')).toBe('https://[::1]:8443');
    expect(() => checkJoinUrl('http://127.0.0.1:8080/.', '127.0.0.1')).toThrow(/no path/);
    expect(checkJoinUrl('http://0.0.0.0:8080', '10.0.0.7')).toBe('http://10.0.0.7:8080'); // bound to every interface: its own address
    expect(checkJoinUrl('http://[::]:8080', '::ffff:10.0.0.7')).toBe('http://10.0.0.7:8080');
  });
});

describe('a flood of joins', () => {
  it('of 300 new ids from one address admits 30 (429 after), never limits a known id, and forgets those that never heartbeat', async () => {
    const serve = await startServe('serve flood', ['--forget-after-ms', '1000'], { process: true });
    const pid = serve.child.process.pid as number;
    // A real agent first: it heartbeats, so it is never forgotten.
    const real = await startAgentCli('real', serve, 6, 1);
    // It prints its address before its join lands (after reading its key): joined before the flood, not rate-limited in it.
    await waitFor('the real agent joined', async () => ((await statusNodes(serve.url)).has('real') ? true : undefined), 10_000, 20);
    const rssBefore = rssMb(pid);
    const own = `http://127.0.0.1:${recorderPort}`;
    const codes = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const r = await joinAs(serve, `fake-${i}`, own); // a member of the swarm flooding ids: each its own key
      codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
      if (r.status === 429) expect(r.body.error).toMatchObject({ code: 'RateLimited', field: 'id' });
    }
    // The bucket spent, the source's next new id is refused before its agent signature is even
    // checked: 429 for a join signed by another agent's key, where a source with room gets 401.
    // A token refilled during a slow flood (one a second) is spent first, so the bucket was just seen empty.
    for (let j = 0; j < 20; j++) {
      const r = await joinAs(serve, `fake-refilled-${j}`, own);
      codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
      if (r.status === 429) break;
    }
    const forged = await postJson(`${serve.url}/v1/nodes`, profile('fake-forged', own), member(serve, 'someone-else'));
    expect(forged.status).toBe(429);
    codes.set(429, (codes.get(429) ?? 0) + 1);
    // 29 with the real agent's join from the same address; a token or two may have refilled meanwhile.
    expect(codes.get(200) ?? 0).toBeGreaterThanOrEqual(29);
    expect(codes.get(200) ?? 0).toBeLessThan(40);
    expect(codes.get(429) ?? 0).toBeGreaterThan(250);
    // Only the ids admitted are bound to a key: a refused join leaves nothing behind (no binding, no write).
    expect(boundIds(serve).length).toBe((codes.get(200) ?? 0) + 1);
    // A known id joins again as often as it likes (one host, many agents, restarts), the bucket empty.
    const realAgent = member(serve, 'real', agentKeyOf(serve, 'real'));
    for (let i = 0; i < 20; i++) expect((await postJson(`${serve.url}/v1/nodes`, profile('real', real.url), realAgent)).status).toBe(200);
    const status = await (await fetch(`${serve.url}/v1/status`)).text();
    expect(status.length).toBeLessThan(64 * 1024);
    // The fakes never heartbeat: forgotten (removed), the real agent kept.
    await waitFor('the fakes forgotten', async () => ((await statusNodes(serve.url)).size === 1 ? true : undefined), 15_000, 200);
    const nodes = await statusNodes(serve.url);
    expect([...nodes.keys()]).toEqual(['real']);
    expect(nodes.get('real')?.state).toBe('alive');
    const metrics = parseMetrics(await (await fetch(`${serve.url}/metrics`)).text());
    expect(metrics.get('hecate_nodes_forgotten_total')).toBeGreaterThanOrEqual(29);
    expect(metrics.get('hecate_nodes{state="down"}')).toBe(0);
    expect(metrics.get('hecate_node_joins_refused_total{reason="rate"}')).toBe(codes.get(429));
    expect(metrics.get('hecate_sse_clients_dropped_total')).toBe(0); // counted there when a reader is dropped (event-stream-bounds.test.ts)
    const swarm = (await (await fetch(`${serve.url}/v1/status`)).json()) as { status: string };
    expect(swarm.status).not.toBe('degraded');
    expect(rssMb(pid) - rssBefore).toBeLessThan(50);
  }, 60_000);

  it('past --max-nodes is refused (503 Full) until a member goes; the default is a topology file\'s limit', async () => {
    expect(DEFAULT_MAX_NODES).toBe(TOPOLOGY_LIMITS.nodes);
    const serve = await startServe('serve max', ['--max-nodes', '3']);
    const own = `http://127.0.0.1:${recorderPort}`;
    for (let i = 0; i < 3; i++) expect((await joinAs(serve, `m${i}`, own)).status).toBe(200);
    const full = await joinAs(serve, 'm3', own);
    expect(full.status).toBe(503);
    expect(full.body.error).toMatchObject({ code: 'Full', field: 'id' });
    expect(boundIds(serve)).toEqual(['m0', 'm1', 'm2']);
    expect((await joinAs(serve, 'm0', own)).status).toBe(200); // a member rejoins
    expect((await postJson(`${serve.url}/v1/nodes/m0/leave`, {}, keys.get(`${serve.url} m0`))).status).toBe(200);
    expect((await joinAs(serve, 'm3', own)).status).toBe(200);
  });
});

describe('GET /v1/status', () => {
  it('is paged by agents: limit and offset, nextOffset, nodesTotal; a bad page names the parameter', async () => {
    const serve = await startServe('serve paged', []);
    const own = `http://127.0.0.1:${recorderPort}`;
    for (let i = 0; i < 5; i++) expect((await joinAs(serve, `p${i}`, own)).status).toBe(200);
    const first = (await (await fetch(`${serve.url}/v1/status?limit=2`)).json()) as { nodes: { id: string }[]; nodesTotal: number; nextOffset: number | null };
    expect(first.nodes.map((n) => n.id)).toEqual(['p0', 'p1']);
    expect(first.nodesTotal).toBe(5);
    expect(first.nextOffset).toBe(2);
    const last = (await (await fetch(`${serve.url}/v1/status?limit=2&offset=4`)).json()) as { nodes: { id: string }[]; nextOffset: number | null };
    expect(last.nodes.map((n) => n.id)).toEqual(['p4']);
    expect(last.nextOffset).toBeNull();
    const bad = await fetch(`${serve.url}/v1/status?limit=100000`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.field).toBe('limit');
  });
});
