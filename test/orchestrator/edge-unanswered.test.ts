/**
 * Calls, not beats, decide a member's usefulness (docs/security.md, "Membership"), on a real
 * `hecate-node serve`: 20 fake members (fixtures/fake-members.mjs, one process) join with score
 * 10, so the plan prefers them, heartbeat every 500 ms and join again every 2 s, and never answer
 * a stage call. Each is benched at its first unanswered call and stays down through its
 * heartbeats and joins (its health probes go unanswered too); six clients keep generating
 * meanwhile, and once the fakes are out every request succeeds on the two honest agents.
 * Then a join flood spread over many addresses (fresh ids and keys from 127.1.x.y, as fast as one
 * process can): a declared agent still joins, and generations succeed meanwhile (their latency:
 * bench/join-flood-spread.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetrics, stopAll, waitFor } from './processes.js';
import { removeServeDirs, startAgentCli, statusTotal, startFakes, startServe, statusNodes, topologyFile, type StartedServe } from './edge-helpers.js';

const FAKES = 20;
// Before the bench (9fab8dd), in this very test: 0 ok / 7 failed in 20 s, p50 20.4 s, every fake alive (a join revived an ejected one).
const CLIENTS = 6;
const topology = topologyFile('unanswered', {
  models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }],
  nodes: [
    { id: 'h1', memoryGb: 6, score: 1 },
    { id: 'h2', memoryGb: 6, score: 1 },
  ],
});

let serve: StartedServe;
let fakes: { stop: () => Promise<string> } | undefined;

beforeAll(async () => {
  serve = await startServe('serve', ['--topology', topology]);
  await startAgentCli('h1', serve, 6, 1);
  await startAgentCli('h2', serve, 6, 1);
  await waitFor('h1 and h2 alive', async () => ([...(await statusNodes(serve.url)).values()].filter((n) => n.state === 'alive').length === 2 ? true : undefined), 20_000, 50);
}, 60_000);

afterAll(async () => {
  await fakes?.stop();
  await stopAll();
  removeServeDirs();
});

/** One client's generations until `until`: each one's status and time. */
async function client(c: number, until: number, out: { status: number; ms: number }[]): Promise<void> {
  for (let i = 0; Date.now() < until; i++) {
    const started = Date.now();
    const r = await fetch(`${serve.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: `c${c} p${i}`, steps: 2 }) });
    await r.arrayBuffer();
    out.push({ status: r.status, ms: Date.now() - started });
  }
}

/** The fakes with a stage call that timed out, from /metrics. */
const timedOut = (m: Map<string, number>) => [...m].flatMap(([k, v]) => (v > 0 ? /^hecate_stage_calls_total\{node="(fake-\d+)",outcome="timeout"\}$/.exec(k)?.slice(1) ?? [] : []));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

describe('members that heartbeat and never answer a stage call', () => {
  it('are benched at their first unanswered call, stay down through heartbeats and joins, and the clients succeed', async () => {
    fakes = await startFakes(serve, 'fake-', FAKES, 10, 'silent');
    const during: { status: number; ms: number }[] = [];
    const until = Date.now() + 15_000;
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c, until, during)));
    // Every fake is down by now (benched, or never given a call), and stays down.
    const nodes = await statusNodes(serve.url);
    const fakeStates = [...nodes.values()].filter((n) => n.state !== 'alive').length;
    const metrics = parseMetrics(await (await fetch(`${serve.url}/metrics`)).text());
    const benched = metrics.get('hecate_node_bench_total{event="benched"}') ?? 0;
    const failed = during.filter((r) => r.status !== 200);
    console.log(`unanswered: ${during.length - failed.length} ok / ${failed.length} failed in 15 s from ${CLIENTS} clients, p50 ${median(during.map((r) => r.ms))} ms; ${benched} benched, ${metrics.get('hecate_node_bench_total{event="probe_failed"}') ?? 0} probes failed, ${fakeStates} of ${nodes.size} members not alive`);
    expect(benched).toBeGreaterThan(0);
    expect(metrics.get('hecate_node_bench_total{event="readmitted"}') ?? 0).toBe(0);
    // Every fake a call went unanswered to is down (one alive shares its copy with a benched one: never called).
    for (const id of timedOut(metrics)) expect(`${id} ${nodes.get(id)?.state}`).toBe(`${id} down`);
    // The fakes keep heartbeating and joining: a second round succeeds whole (a fake the plan
    // had not called yet costs its first call, and a failover).
    const after: { status: number; ms: number }[] = [];
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c + CLIENTS, Date.now() + 3000, after)));
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((r) => r.status !== 200)).toEqual([]);
    // Only while the fakes were first met: a client's first requests, each failing over fake after
    // fake as the clients' calls bench them (each fake costs one unanswered call, 5 s).
    expect(failed.length).toBeLessThanOrEqual(3 * CLIENTS);
    const end = parseMetrics(await (await fetch(`${serve.url}/metrics`)).text());
    expect(end.get('hecate_node_bench_total{event="readmitted"}') ?? 0).toBe(0);
    const still = await statusNodes(serve.url);
    for (const id of timedOut(end)) expect(`${id} ${still.get(id)?.state}`).toBe(`${id} down`);
    expect(still.get('h1')?.state).toBe('alive');
    expect(still.get('h2')?.state).toBe('alive');
  }, 90_000);
});

describe('a join flood from many addresses', () => {
  it('leaves room for a declared agent to join, and generations succeed meanwhile', async () => {
    const spread = await startServe('serve spread', ['--topology', topologyFile('spread', { models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }], nodes: [{ id: 's0', memoryGb: 16, score: 3 }, { id: 'late', memoryGb: 16, score: 1 }] })]);
    await startAgentCli('s0', spread, 16, 3);
    await waitFor('s0 alive', async () => ((await statusNodes(spread.url)).get('s0')?.state === 'alive' ? true : undefined), 20_000, 50);
    const flood = await startFakes(spread, 'flood-', 0, 1, 'flood');
    const floodStarted = Date.now();
    try {
      await startAgentCli('late', spread, 16, 1);
      const statuses: number[] = [];
      await waitFor('late alive, generations answered meanwhile', async () => {
        const r = await fetch(`${spread.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: `p${statuses.length}`, steps: 1 }) });
        await r.arrayBuffer();
        statuses.push(r.status);
        return statuses.length >= 10 && (await statusNodes(spread.url)).get('late')?.state === 'alive' ? true : undefined;
      }, 30_000, 0);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    } finally {
      // The flood goes on at least 3 s (on a fast machine the rest can be done in one), so its
      // joins meet the limit however quickly the declared agent got in.
      if (Date.now() - floodStarted < 3000) await new Promise((r) => setTimeout(r, 3000 - (Date.now() - floodStarted)));
      const said = await flood.stop();
      const answers = JSON.parse(/answers (.*)/.exec(said)?.[1] ?? '{}') as Record<string, number>;
      const refused = answers['429'] ?? 0;
      const admitted = answers['200'] ?? 0;
      // One box's many addresses are one network: 30 new ids at once, then one a second.
      expect(refused, `the flood's answers by status: ${said.trim() || '(it said nothing)'}`).toBeGreaterThan(admitted);
      expect(await statusTotal(spread.url)).toBeLessThanOrEqual(2 + admitted);
    }
  }, 90_000);
});
