/**
 * Real processes (docs/rebalance.md "Replicas, serve and agents"): `hecate-node serve --rebalance`
 * and stand-in agents on loopback, sessions running for about 12 s while the swarm churns — fast
 * agents join as spares, a slow one leaves, another fast one joins — and the automatic policy
 * moves spans to them, each loaded by its agent (`POST /v1/spans/load`, the modelled time) before
 * it is routed. Every session must complete with the digest a single faultless holder gives: 0
 * wrong, 0 lost; the moves must have begun, formed and finished, and a fast agent must hold a span
 * it was told to load. Every process started here is killed in afterAll.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectedDigest } from '../../src/wire/digest.js';
import { cleanUpAfterAll, collectEvents, startCli, waitFor, type Child, type ReceivedEvent } from './processes.js';

const LAYERS = 12;
const SESSIONS = 120;
const LOAD_MS = 12_000;
const MAX_CONCURRENT = 12;

// Fast small nodes (4 layers of 0.5 GB) and slow big ones (the whole model): the plan puts a copy on three fast nodes, one
// on a fast node and two slow ones, one on a slow node. A fast joiner (10 layers) holds no copy alone, so it joins as a
// spare and only a rebalance puts it to work, its spans loaded at 1 GB/s (the default): 2-4 s.
const declared = [
  ...[1, 2, 3, 4].map((i) => ({ id: `a${i}`, memoryGb: 2, score: 8 })),
  ...[1, 2, 3].map((i) => ({ id: `b${i}`, memoryGb: 6, score: 1 })),
];
const joiners = [1, 2].map((i) => ({ id: `n${i}`, memoryGb: 5, score: 8 }));
const dir = mkdtempSync(join(tmpdir(), 'hecate-chaos-rebalance-'));
const topologyFile = join(dir, 'topology.json');
const tokenFile = join(dir, 'swarm-token');
writeFileSync(topologyFile, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: LAYERS, layerGb: 0.5, pipelines: 3 }], nodes: declared }));

const sse = new AbortController();
cleanUpAfterAll(dir, sse);

/** What this test reads of `GET /v1/status`. */
type Status = { readonly status: string; readonly nodes: readonly { readonly id: string; readonly state: string }[]; readonly plan: { readonly pipelines: readonly { readonly stages: readonly { readonly nodeId: string }[] }[] } };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('hecate-node serve --rebalance under churn', () => {
  it('moves spans to the agents that joined while sessions run: every session completes with the right digest', async () => {
    const { child: serveChild, match: url } = await startCli('serve', ['serve', '--port', '0', '--topology', topologyFile, '--token-file', tokenFile, '--rebalance', '--rebalance-every-ms', '1000'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true });
    const status = async (): Promise<Status> => (await fetch(`${url}/v1/status`)).json() as Promise<Status>;
    const events: ReceivedEvent[] = [];
    await collectEvents(`${url}/v1/events`, events, sse.signal);
    const agents = new Map<string, { child: Child; url: string }>();
    const startAgent = async (profile: { id: string; memoryGb: number; score: number }) => {
      const { child, match } = await startCli(profile.id, ['agent', '--id', profile.id, '--memory', String(profile.memoryGb), '--score', String(profile.score), '--join', url, '--port', '0', '--token-file', tokenFile], /listening on (http:\/\/[^\s,]+)/, 30_000, { process: true });
      agents.set(profile.id, { child, url: match });
    };
    await Promise.all(declared.map(startAgent));
    await waitFor('every agent alive', async () => {
      const s = await status();
      return s.nodes.every((n) => n.state === 'alive') && s.status === 'healthy' ? s : undefined;
    }, 30_000);

    interface Outcome { readonly ok: boolean; readonly right: boolean; readonly error?: string }
    const outcomes: Outcome[] = [];
    let running = 0;
    const loadStart = Date.now();
    const one = async (i: number): Promise<void> => {
      const prompt = `rebalance session ${i}`;
      const steps = 2 + (i % 3);
      running++;
      try {
        const response = await fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt, steps }) });
        const body = (await response.json()) as { digest?: string; error?: { code: string; message: string } };
        outcomes.push(response.ok ? { ok: true, right: body.digest === expectedDigest(LAYERS, prompt, steps) } : { ok: false, right: false, error: `${response.status} ${body.error?.code}: ${body.error?.message}` });
      } catch (error) {
        outcomes.push({ ok: false, right: false, error: String(error) });
      } finally {
        running--;
      }
    };
    // Sessions start every LOAD_MS / SESSIONS ms until the churn's moves are done (at least SESSIONS of them).
    let stop = false;
    let started = 0;
    const load = (async () => {
      const all: Promise<void>[] = [];
      for (let i = 0; !stop || i < SESSIONS; i++) {
        const due = loadStart + (i * LOAD_MS) / SESSIONS;
        if (due > Date.now()) await sleep(due - Date.now());
        while (running >= MAX_CONCURRENT) await sleep(10);
        all.push(one(i));
        started++;
      }
      await Promise.all(all);
    })();

    // Churn under load: a fast spare joins at 1 s (a rebalance puts it to work), a slow agent leaves at 6 s, another fast
    // spare joins at 7 s (a second rebalance).
    await sleep(loadStart + 1000 - Date.now());
    await startAgent(joiners[0]!);
    await waitFor('a move to form its copy', () => events.find((e) => e.type === 'copy.formed'), 15_000).catch(async (error: Error) => {
      throw new Error(`${error.message}; events: ${events.map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 300)}`).join('\n')}; status: ${JSON.stringify(await status())}; serve: ${serveChild.stderr().slice(-3000)}`);
    });
    await sleep(Math.max(0, loadStart + 6000 - Date.now()));
    const busy = new Set((await status()).plan.pipelines.filter((p) => p.stages.some((s) => s.nodeId === 'n1')).flatMap((p) => p.stages.map((s) => s.nodeId)));
    const leaver = declared.map((d) => d.id).find((id) => id.startsWith('b') && !busy.has(id)) ?? 'b1';
    agents.get(leaver)?.child.process.kill('SIGTERM'); // a clean leave: the retirement relocates its layers
    await sleep(Math.max(0, loadStart + 7000 - Date.now()));
    await startAgent(joiners[1]!);
    const formedWith = (id: string) => events.find((e) => e.type === 'copy.formed' && JSON.stringify(e.data['plan']).includes(`"${id}"`));
    await waitFor('the second joiner put to work', () => formedWith('n2'), 30_000);
    await waitFor('the moves under way to end', () => {
      const begun = events.filter((e) => e.type === 'moves.begun').flatMap((e) => e.data['moveIds'] as string[]);
      const ended = new Set(events.filter((e) => e.type === 'move.done' || e.type === 'move.aborted').map((e) => e.data['moveId'] as string));
      return begun.every((id) => ended.has(id)) ? true : undefined;
    }, 20_000);
    stop = true;
    await load;
    const end = await status();

    const failures = outcomes.filter((o) => !o.ok);
    const wrong = outcomes.filter((o) => o.ok && !o.right);
    expect(failures.map((o) => o.error), 'lost sessions').toEqual([]);
    expect(wrong.length, 'sessions with a wrong digest').toBe(0);
    expect(outcomes.length).toBe(started);
    const begun = events.filter((e) => e.type === 'moves.begun').flatMap((e) => e.data['moveIds'] as string[]);
    const done = events.filter((e) => e.type === 'move.done').map((e) => e.data['moveId'] as string);
    expect(begun.length, 'moves begun').toBeGreaterThan(0);
    expect(done.length, 'moves done').toBeGreaterThan(0);
    // The joiners serve in the plan now, each holding a span it was told to load.
    const inPlan = new Set(end.plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
    expect(joiners.filter((j) => inPlan.has(j.id)).map((j) => j.id)).toEqual(['n1', 'n2']);
    // Each joiner loaded its spans when told (POST /v1/spans/load), taking the modelled time (0.5 GB a layer at 1 GB/s).
    for (const j of joiners) {
      const loads = [...(agents.get(j.id)?.child.stderr() ?? '').matchAll(/loaded base \[(\d+), (\d+)\) for a rebalance in (\d+) ms/g)];
      expect(loads.length, `${j.id}'s loads`).toBeGreaterThan(0);
      for (const [, start, end, ms] of loads) expect(Number(ms)).toBeGreaterThanOrEqual((Number(end) - Number(start)) * 0.5 * 1000 - 50);
    }
    console.log(`chaos-rebalance: ${outcomes.length} sessions in ${((Date.now() - loadStart) / 1000).toFixed(1)} s, ${outcomes.length - failures.length - wrong.length} right, ${wrong.length} wrong, ${failures.length} lost; ${begun.length} moves begun, ${done.length} done, ${events.filter((e) => e.type === 'move.aborted').length} aborted; ${leaver} left; plan at the end: ${end.plan.pipelines.map((p) => p.stages.map((s) => s.nodeId).join('+')).join(', ')}`);
  }, 90_000);
});
