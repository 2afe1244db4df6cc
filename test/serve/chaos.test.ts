/**
 * Real processes: `hecate-node serve` and 8 `hecate-node agent`s on loopback, a few hundred
 * sessions over about 30 s, and three faults while they run — one agent SIGKILLed, one SIGSTOPped
 * for 2 s then continued, one SIGKILLed and restarted with the same id. Every session must
 * complete with the digest a single faultless holder gives; the killed agent must be found down
 * within the detector's bound; the paused one suspected and back without a down; the restarted
 * one must rejoin; /metrics must agree with what this test counted. Every process started here is
 * killed in afterAll, whatever happened.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectedDigest } from '../../src/serve/stage-work.js';
import { collectEvents, parseMetrics, startCli, stopAll, waitFor, type Child, type ReceivedEvent } from './processes.js';

const LAYERS = 12;
const SESSIONS = 300;
const LOAD_MS = 30_000;
const MAX_CONCURRENT = 32;
/** Slack on top of the detector's bound for a loaded 2-core machine (scheduling, not speed). */
const SLACK_MS = 1500;
const HEARTBEAT_MS = 1000;

const nodes = [1, 1.5, 2, 2.5, 3, 2, 1.5, 1].map((score, i) => ({ id: `n${i + 1}`, memoryGb: 6, score }));
const dir = mkdtempSync(join(tmpdir(), 'hecate-chaos-'));
const topologyFile = join(dir, 'topology.json');
writeFileSync(topologyFile, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 3 }], nodes }));

const sse = new AbortController();
afterAll(async () => {
  sse.abort();
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

interface Status {
  readonly status: string;
  readonly plan: { readonly pipelines: readonly { readonly id: string; readonly stages: readonly { readonly nodeId: string }[] }[] };
  readonly nodes: readonly { readonly id: string; readonly state: string; readonly joins: number; readonly lastHeartbeatAgoMs: number | null }[];
  readonly detector: { readonly suspectAfterMs: number; readonly downAfterMs: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('hecate-node serve with 8 agents under chaos', () => {
  it('completes every session with the right digest through a SIGKILL, a SIGSTOP and a restart, and /metrics agrees', async () => {
    const { child: orchestratorChild, match: url } = await startCli('serve', ['serve', '--port', '0', '--topology', topologyFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const status = async (): Promise<Status> => (await fetch(`${url}/v1/status`)).json() as Promise<Status>;
    const events: ReceivedEvent[] = [];
    await collectEvents(`${url}/v1/events`, events, sse.signal);

    const agents = new Map<string, Child>();
    const startAgent = async (id: string): Promise<Child> => {
      const profile = nodes.find((n) => n.id === id);
      const { child } = await startCli(id, ['agent', '--id', id, '--memory', String(profile?.memoryGb), '--score', String(profile?.score), '--join', url, '--port', '0'], /listening on (http:\/\/\S+)/);
      agents.set(id, child);
      return child;
    };
    await Promise.all(nodes.map((n) => startAgent(n.id)));
    const ready = await waitFor('every agent alive', async () => {
      const s = await status();
      return s.nodes.every((n) => n.state === 'alive') && s.status === 'healthy' ? s : undefined;
    }, 30_000);

    // One victim in each copy, so a cover always exists (a copy keeps serving each fault's layers).
    const [p0, p1, p2] = ready.plan.pipelines;
    const killed = p0?.stages[1]?.nodeId ?? p0?.stages[0]?.nodeId;
    const paused = p1?.stages[1]?.nodeId ?? p1?.stages[0]?.nodeId;
    const restarted = p2?.stages[1]?.nodeId ?? p2?.stages[0]?.nodeId;
    expect(new Set([killed, paused, restarted]).size, 'three victims in three copies').toBe(3);
    if (killed === undefined || paused === undefined || restarted === undefined) throw new Error('plan without three copies');
    const { suspectAfterMs, downAfterMs } = ready.detector;

    // The load: SESSIONS sessions started evenly over LOAD_MS, at most MAX_CONCURRENT at once.
    interface Outcome { readonly ok: boolean; readonly right: boolean; readonly resumes: number; readonly error?: string }
    const outcomes: Outcome[] = [];
    let running = 0;
    const loadStart = Date.now();
    const one = async (i: number): Promise<void> => {
      const prompt = `chaos session ${i}`;
      const steps = 4 + (i % 5);
      running++;
      try {
        const response = await fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt, steps }) });
        const body = (await response.json()) as { digest?: string; resumes?: number; error?: { code: string; message: string } };
        outcomes.push(response.ok
          ? { ok: true, right: body.digest === expectedDigest(LAYERS, prompt, steps), resumes: body.resumes ?? 0 }
          : { ok: false, right: false, resumes: 0, error: `${response.status} ${body.error?.code}: ${body.error?.message}` });
      } catch (error) {
        outcomes.push({ ok: false, right: false, resumes: 0, error: String(error) });
      } finally {
        running--;
      }
    };
    const load = (async () => {
      const all: Promise<void>[] = [];
      for (let i = 0; i < SESSIONS; i++) {
        const due = loadStart + (i * LOAD_MS) / SESSIONS;
        if (due > Date.now()) await sleep(due - Date.now());
        while (running >= MAX_CONCURRENT) await sleep(10);
        all.push(one(i));
      }
      await Promise.all(all);
    })();

    const t = (at: unknown) => `${((at as number) - loadStart) / 1000}s`;
    const history = (nodeId: string) => () =>
      `${nodeId}; its events: ${events.filter((e) => e.data['nodeId'] === nodeId).map((e) => `${t(e.data['at'])} ${e.type}${e.data['cause'] ? `(${String(e.data['cause'])})` : ''}${e.data['silentMs'] !== undefined ? ` silent ${String(e.data['silentMs'])} ms` : ''}`).join(', ')}`;
    const eventsOf = (type: string, nodeId: string, after = 0) => events.filter((e) => e.type === type && e.data['nodeId'] === nodeId && (e.data['at'] as number) >= after);

    // 1. SIGKILL one agent at 5 s: it must be found down within the detector's bound.
    await sleep(loadStart + 5000 - Date.now());
    const killedAt = Date.now();
    agents.get(killed)?.process.kill('SIGKILL');
    const killedDown = await waitFor(history(killed), () => eventsOf('node.down', killed, killedAt)[0], downAfterMs + HEARTBEAT_MS + 10_000);
    const killedAfter = (killedDown.data['at'] as number) - killedAt;

    // 2. SIGSTOP another at 12 s, just after one of its heartbeats, for 2 s.
    await sleep(loadStart + 12_000 - Date.now());
    await waitFor(`a fresh heartbeat of ${paused}`, async () => {
      const n = (await status()).nodes.find((x) => x.id === paused);
      return n?.lastHeartbeatAgoMs !== null && (n?.lastHeartbeatAgoMs ?? Infinity) < 250 ? true : undefined;
    }, 5000, 25);
    const pausedAt = Date.now();
    agents.get(paused)?.process.kill('SIGSTOP');
    await sleep(2000);
    agents.get(paused)?.process.kill('SIGCONT');
    const continuedAt = Date.now();
    const trusted = await waitFor(history(paused), () => eventsOf('node.trusted', paused, pausedAt)[0], 15_000);

    // 3. SIGKILL a third at 19 s; once it is found down, start it again with the same id.
    await sleep(loadStart + 19_000 - Date.now());
    const restartKilledAt = Date.now();
    agents.get(restarted)?.process.kill('SIGKILL');
    await waitFor(history(restarted), () => eventsOf('node.down', restarted, restartKilledAt)[0], downAfterMs + HEARTBEAT_MS + 10_000);
    const restartedAt = Date.now();
    await startAgent(restarted);
    const rejoined = await waitFor(`${restarted} rejoined`, () => events.find((e) => e.type === 'node.joined' && e.data['nodeId'] === restarted && e.data['rejoin'] === true), 15_000);
    await waitFor(history(restarted), () => eventsOf('node.alive', restarted, restartedAt)[0], 15_000);

    await load;
    await sleep(1500); // let the last heartbeats and events land before comparing counts
    const end = await status();
    const metrics = parseMetrics(await (await fetch(`${url}/metrics`)).text());

    // Every session completed, with the digest of a faultless run.
    const failures = outcomes.filter((o) => !o.ok);
    const wrong = outcomes.filter((o) => o.ok && !o.right);
    expect(failures.map((o) => o.error), 'failed sessions').toEqual([]);
    expect(wrong.length, 'sessions with a wrong digest').toBe(0);
    expect(outcomes.length).toBe(SESSIONS);
    const resumes = outcomes.reduce((sum, o) => sum + o.resumes, 0);
    expect(resumes, 'the faults hit running sessions').toBeGreaterThan(0);

    // The killed agent: down within the detector's bound (its last heartbeat was at most one interval before the kill).
    expect(killedAfter).toBeLessThanOrEqual(downAfterMs + HEARTBEAT_MS + SLACK_MS);
    // The paused agent: suspected, heard from again, never down.
    const suspected = eventsOf('node.suspected', paused, pausedAt)[0];
    expect(suspected, `${paused} suspected while paused`).toBeDefined();
    expect(eventsOf('node.down', paused), `${paused} never down`).toEqual([]);
    // The restarted agent: joined again under its id and alive at the end; the killed one still down.
    const state = new Map(end.nodes.map((n) => [n.id, n]));
    expect(state.get(restarted)?.state).toBe('alive');
    expect(state.get(restarted)?.joins).toBe(2);
    expect(state.get(killed)?.state).toBe('down');
    expect(end.status).toBe('degraded');

    // /metrics agrees with what this test counted.
    expect(metrics.get('hecate_requests_total{outcome="ok"}')).toBe(SESSIONS);
    expect([...metrics.keys()].filter((k) => k.startsWith('hecate_requests_total{') && !k.includes('"ok"'))).toEqual([]);
    expect(metrics.get('hecate_session_resumes_total')).toBe(resumes);
    expect(metrics.get('hecate_node_joins_total{kind="join"}')).toBe(nodes.length);
    expect(metrics.get('hecate_node_joins_total{kind="rejoin"}')).toBe(1);
    expect(end.nodes.filter((n) => n.state !== 'alive').map((n) => `${n.id}:${n.state}`), 'agents not alive at the end').toEqual([`${killed}:down`]);
    expect(metrics.get('hecate_nodes{state="alive"}')).toBe(nodes.length - 1);
    expect(metrics.get('hecate_nodes{state="down"}')).toBe(1);
    const counted = new Map<string, number>();
    for (const e of events) {
      if (e.type !== 'node.suspected' && e.type !== 'node.down' && e.type !== 'node.alive') continue;
      const key = `hecate_detection_events_total{event="${e.type}",cause="${e.type === 'node.suspected' ? 'detector' : String(e.data['cause'])}"}`;
      counted.set(key, (counted.get(key) ?? 0) + 1);
    }
    const reported = new Map([...metrics].filter(([k]) => k.startsWith('hecate_detection_events_total{')));
    expect(reported).toEqual(counted);
    for (const n of end.nodes) expect(metrics.get(`hecate_node_inflight{node="${n.id}"}`) ?? 0).toBe(0);

    const pausedSuspectAfter = (suspected?.data['at'] as number) - pausedAt;
    console.log(
      `chaos: ${outcomes.length} sessions in ${((Date.now() - loadStart) / 1000).toFixed(1)} s, ${outcomes.length - failures.length - wrong.length} right, ${wrong.length} wrong, ${failures.length} failed, ${resumes} resumes; ` +
        `killed ${killed} down after ${killedAfter} ms (${String(killedDown.data['cause'])}; bound ${downAfterMs} + ${HEARTBEAT_MS} ms); ` +
        `paused ${paused} 2 s: suspected after ${pausedSuspectAfter} ms, heard from ${(trusted.data['at'] as number) - continuedAt} ms after SIGCONT, 0 downs; ` +
        `restarted ${restarted} rejoined ${(rejoined.data['at'] as number) - restartedAt} ms after its start; ` +
        `metrics agree (requests ${metrics.get('hecate_requests_total{outcome="ok"}')}, resumes ${metrics.get('hecate_session_resumes_total')}, detection events ${[...reported.values()].reduce((a, b) => a + b, 0)})`,
    );
    // A clean leave on SIGTERM: the agent tells the orchestrator and exits 0; so does the orchestrator.
    const leaver = nodes.map((n) => n.id).find((id) => id !== killed && id !== paused && id !== restarted) as string;
    agents.get(leaver)?.process.kill('SIGTERM');
    expect(await agents.get(leaver)?.exited).toBe('exit 0');
    expect(events.some((e) => e.type === 'node.left' && e.data['nodeId'] === leaver)).toBe(true);
    orchestratorChild.process.kill('SIGTERM');
    expect(await orchestratorChild.exited).toBe('exit 0');

    expect(suspectAfterMs).toBeLessThan(2000); // the settings make a 2 s pause suspect…
    expect(downAfterMs).toBeGreaterThan(3000); // …and not down, even with the heartbeat a second late
  }, 180_000);
});
