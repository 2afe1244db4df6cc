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
import { expectedDigest } from '../../src/wire/digest.js';
import { NatsServer } from '../replication/nats-server.js';
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
/** The swarm secret: the first serve creates it, every serve and agent of a test reads it. */
const tokenFile = join(dir, 'swarm-token');
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
    const { child: orchestratorChild, match: url } = await startCli('serve', ['serve', '--port', '0', '--topology', topologyFile, '--token-file', tokenFile], /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true });
    const status = async (): Promise<Status> => (await fetch(`${url}/v1/status`)).json() as Promise<Status>;
    const events: ReceivedEvent[] = [];
    await collectEvents(`${url}/v1/events`, events, sse.signal);

    const agents = new Map<string, Child>();
    const startAgent = async (id: string): Promise<Child> => {
      const profile = nodes.find((n) => n.id === id);
      const { child } = await startCli(id, ['agent', '--id', id, '--memory', String(profile?.memoryGb), '--score', String(profile?.score), '--join', url, '--port', '0', '--token-file', tokenFile], /listening on (http:\/\/\S+)/, 30_000, { process: true });
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

/**
 * The replicated variant (docs/serve.md, "Several orchestrators"): a real nats-server, two
 * `serve` processes on one swarm (`--nats --swarm`, started together: they race for the genesis),
 * 6 agents each given both orchestrators (half of them A first, half B first), 300 sessions over
 * 20 s sent alternately to A and B. An agent SIGKILLed at 2 s must get the same downs and revivals
 * on both orchestrators, in the same order (one log). From 8 s, once at least 3 sessions are open
 * on A, A is frozen (SIGSTOP: nothing more leaves it), its open requests are counted once no
 * answer has come from it for 300 ms, and it is SIGKILLed. Every request carries an idempotency
 * key; the client retries a request whose orchestrator cannot be reached on the other one with the
 * same key (waiting out `Retry-After` while the dead one's claim runs out), which resumes it from
 * its last checkpoint. The attempts interrupted must be exactly those in flight on A at the kill,
 * and none is lost: every session completes with the faultless digest; the agents that talked to
 * A move to B, which hears them all; /metrics of B counts what B answered.
 */
const REPLICATED = { layers: 12, sessions: 300, loadMs: 20_000, maxConcurrent: 32, agentKillAt: 2000, orchestratorKillAt: 8000, inflightAtKill: 3, quietMs: 300, checkpointEvery: 4 };
const replicatedNodes = [1, 2, 1.5, 2.5, 1, 2].map((score, i) => ({ id: `r${i + 1}`, memoryGb: 6, score }));
const replicatedTopology = join(dir, 'replicated-topology.json');
writeFileSync(replicatedTopology, JSON.stringify({ models: [{ id: 'base', kind: 'base', layers: REPLICATED.layers, pipelines: 3 }], nodes: replicatedNodes }));
let nats: NatsServer | undefined;
afterAll(async () => {
  await nats?.dispose();
});

describe('two hecate-node serve on one swarm (NATS), one of them killed', () => {
  it('interrupts exactly the sessions in flight on the killed orchestrator; clients retry them on the other with their keys, which resumes them, and none is lost', async () => {
    nats = await NatsServer.start();
    const serveArgs = ['serve', '--port', '0', '--topology', replicatedTopology, '--nats', nats.url, '--swarm', 'chaos', '--token-file', tokenFile, '--checkpoint-every', String(REPLICATED.checkpointEvery), '--claim-lease-ms', '1000'];
    const [a, b] = await Promise.all([
      startCli('serve A', serveArgs, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true }),
      startCli('serve B', serveArgs, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true }),
    ]);
    const urls = [a.match, b.match] as const;
    const status = async (url: string): Promise<Status> => (await fetch(`${url}/v1/status`)).json() as Promise<Status>;
    const eventsOn = [[], []] as [ReceivedEvent[], ReceivedEvent[]];
    await collectEvents(`${urls[0]}/v1/events`, eventsOn[0], sse.signal);
    await collectEvents(`${urls[1]}/v1/events`, eventsOn[1], sse.signal);

    const agents = new Map<string, Child>();
    // Stages twice the default's length: a session lasts more than two arrivals on A even on an idle
    // machine, so A reliably has several sessions open when it is killed.
    await Promise.all(replicatedNodes.map(async (n, i) => {
      const order = i % 2 === 0 ? `${urls[0]},${urls[1]}` : `${urls[1]},${urls[0]}`;
      const { child } = await startCli(n.id, ['agent', '--id', n.id, '--memory', String(n.memoryGb), '--score', String(n.score), '--join', order, '--port', '0', '--per-layer-ms', '4', '--token-file', tokenFile], /listening on (http:\/\/\S+)/, 30_000, { process: true });
      agents.set(n.id, child);
    }));
    const planOf = (s: Status) => JSON.stringify(s.plan);
    const ready = await waitFor('every agent alive on both orchestrators, one plan', async () => {
      const [sa, sb] = await Promise.all(urls.map(status));
      if (sa === undefined || sb === undefined) return undefined;
      const allAlive = (s: Status) => s.status === 'healthy' && s.nodes.length === replicatedNodes.length && s.nodes.every((n) => n.state === 'alive');
      return allAlive(sa) && allAlive(sb) && planOf(sa) === planOf(sb) ? sa : undefined;
    }, 30_000);
    // The victim agent: in copy 0, talking to A first (even index), so A's death does not touch it.
    const victim = ready.plan.pipelines[0]?.stages.map((s) => s.nodeId).find((id) => replicatedNodes.findIndex((n) => n.id === id) % 2 === 0) ?? ready.plan.pipelines[0]?.stages[0]?.nodeId;
    if (victim === undefined) throw new Error('plan without a copy');

    // The client: session i goes to orchestrator i % 2 first, and to the other when it cannot reach it.
    interface Attempt { readonly session: number; readonly on: 0 | 1; readonly startedAt: number; endedAt?: number; ok?: boolean; right?: boolean; error?: string; steps?: number; resumedFrom?: number; retryAfterS?: number }
    const attempts: Attempt[] = [];
    const inflight = [new Set<Attempt>(), new Set<Attempt>()] as const;
    const lastAnswer = [0, 0];
    const done = new Map<number, boolean>(); // session → completed with the right digest
    let running = 0;
    const call = async (session: number, on: 0 | 1): Promise<Attempt> => {
      const prompt = `replicated session ${session}`;
      const steps = 8 + (session % 9);
      const attempt: Attempt = { session, on, startedAt: Date.now() };
      attempts.push(attempt);
      inflight[on].add(attempt);
      try {
        const response = await fetch(`${urls[on]}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `chaos-${session}` }, body: JSON.stringify({ model: 'base', prompt, steps }) });
        const body = (await response.json()) as { digest?: string; resumedFrom?: number; error?: { code: string; message: string } };
        lastAnswer[on] = Date.now();
        attempt.ok = response.ok;
        attempt.right = body.digest === expectedDigest(REPLICATED.layers, prompt, steps);
        attempt.steps = steps;
        if (body.resumedFrom !== undefined) attempt.resumedFrom = body.resumedFrom;
        if (!response.ok) attempt.error = `${response.status} ${body.error?.code}: ${body.error?.message}`;
        if (response.status === 409 && body.error?.code === 'InProgress') attempt.retryAfterS = Number(response.headers.get('retry-after'));
      } catch (error) {
        attempt.ok = false;
        attempt.error = `unreachable: ${String((error as { cause?: unknown }).cause ?? error)}`;
      } finally {
        attempt.endedAt = Date.now();
        inflight[on].delete(attempt);
      }
      return attempt;
    };
    const one = async (session: number): Promise<void> => {
      running++;
      try {
        const first = session % 2 === 0 ? 0 : 1;
        let attempt = await call(session, first);
        if (attempt.error?.startsWith('unreachable') === true) attempt = await call(session, first === 0 ? 1 : 0);
        // The dead orchestrator's claim on the key has not run out yet: wait as told, then again.
        while (attempt.retryAfterS !== undefined) {
          await sleep(attempt.retryAfterS * 1000);
          attempt = await call(session, attempt.on);
        }
        done.set(session, attempt.ok === true && attempt.right === true);
      } finally {
        running--;
      }
    };
    const loadStart = Date.now();
    const load = (async () => {
      const all: Promise<void>[] = [];
      for (let i = 0; i < REPLICATED.sessions; i++) {
        const due = loadStart + (i * REPLICATED.loadMs) / REPLICATED.sessions;
        if (due > Date.now()) await sleep(due - Date.now());
        while (running >= REPLICATED.maxConcurrent) await sleep(10);
        all.push(one(i));
      }
      await Promise.all(all);
    })();
    const downsOf = (events: ReceivedEvent[], nodeId: string, after: number) => events.filter((e) => e.type === 'node.down' && e.data['nodeId'] === nodeId && (e.data['at'] as number) >= after);

    // 1. An agent SIGKILLed: both orchestrators take it down, by the one log.
    await sleep(loadStart + REPLICATED.agentKillAt - Date.now());
    const agentKilledAt = Date.now();
    agents.get(victim)?.process.kill('SIGKILL');
    await waitFor(`${victim} down on both orchestrators`, () => (downsOf(eventsOn[0], victim, agentKilledAt).length > 0 && downsOf(eventsOn[1], victim, agentKilledAt).length > 0 ? true : undefined), 15_000);

    // 2. Orchestrator A frozen, its open requests counted once it has been quiet, then killed.
    await sleep(loadStart + REPLICATED.orchestratorKillAt - Date.now());
    await waitFor(`${REPLICATED.inflightAtKill} sessions in flight on A`, () => (inflight[0].size >= REPLICATED.inflightAtKill ? true : undefined), 10_000, 5);
    // A's steps just before its freeze: what the interrupted requests had done, plus what it answered.
    const stepsOnA = parseMetrics(await (await fetch(`${urls[0]}/metrics`)).text()).get('hecate_session_steps_total') ?? 0;
    const stoppedAt = Date.now();
    a.child.process.kill('SIGSTOP');
    await waitFor('A quiet', () => (Date.now() - Math.max(stoppedAt, lastAnswer[0] ?? 0) >= REPLICATED.quietMs ? true : undefined), 10_000, 20);
    const inflightAtKill = new Set(inflight[0]);
    // Attempts are in start order: those before this index started before the kill. A timestamp
    // cannot say so, as an attempt can start in the kill's millisecond, after it.
    const startedBeforeKill = attempts.length;
    const killedAt = Date.now();
    a.child.process.kill('SIGKILL');

    await load;
    // The killed agent may be between a probation revival (its ejection ban ends) and the
    // detector's next down: wait for it to be down, and every other agent alive, on B.
    const end = await waitFor(`only ${victim} down on B`, async () => {
      const s = await status(urls[1]);
      return s.nodes.every((n) => (n.id === victim ? n.state === 'down' : n.state === 'alive')) ? s : undefined;
    }, 10_000);
    const metrics = parseMetrics(await (await fetch(`${urls[1]}/metrics`)).text());

    // Interrupted: attempts on A that were open at the kill. Each failed; no other attempt failed
    // but those sent to A after it died (refused, and retried on B) and those B answered
    // InProgress while A's claim on their key ran out (retried after Retry-After).
    const interrupted = attempts.slice(0, startedBeforeKill).filter((x) => x.on === 0 && x.ok === false);
    const refused = attempts.slice(startedBeforeKill).filter((x) => x.on === 0);
    expect(new Set(interrupted), 'sessions interrupted = sessions in flight on A at its kill').toEqual(inflightAtKill);
    expect(interrupted.length, 'the kill hit running sessions').toBeGreaterThan(0);
    expect(interrupted.every((x) => x.error?.startsWith('unreachable') === true)).toBe(true);
    expect(refused.every((x) => x.ok === false && x.error?.startsWith('unreachable') === true), 'A answers nothing after its death').toBe(true);
    expect(attempts.filter((x) => x.on === 1 && x.ok !== true && x.retryAfterS === undefined).map((x) => x.error), 'failed attempts on B').toEqual([]);
    // None lost: each interrupted session completed on B, resumed from its last checkpoint.
    const finals = interrupted.map((x) => attempts.filter((y) => y.session === x.session && y.on === 1 && y.ok === true));
    expect(finals.map((f) => f.length), 'interrupted sessions completed on B').toEqual(interrupted.map(() => 1));
    const resumedFrom = finals.map((f) => f[0]?.resumedFrom ?? 0);
    expect(resumedFrom.every((k) => k % REPLICATED.checkpointEvery === 0)).toBe(true);
    expect(resumedFrom.some((k) => k > 0), 'some interrupted session resumed from a checkpoint').toBe(true);
    const answeredByA = attempts.filter((x) => x.on === 0 && x.ok === true).reduce((sum, x) => sum + (x.steps ?? 0), 0);
    const recomputed = stepsOnA - answeredByA - resumedFrom.reduce((a, b) => a + b, 0);
    expect(attempts.filter((x) => x.ok === true && x.right !== true).length, 'wrong digests').toBe(0);
    expect(done.size).toBe(REPLICATED.sessions);
    expect([...done].filter(([, ok]) => !ok).map(([s]) => s), 'sessions that never completed').toEqual([]);
    expect(metrics.get('hecate_requests_total{outcome="ok"}')).toBe(attempts.filter((x) => x.on === 1 && x.ok === true).length);

    // The killed agent: one down on each orchestrator, the same cause on both (one log).
    const story = (events: ReceivedEvent[], nodeId: string) => events.filter((e) => e.data['nodeId'] === nodeId).map((e) => `${((e.data['at'] as number) - loadStart) / 1000}s ${e.type}${e.data['cause'] ? `(${String(e.data['cause'])})` : ''}`).join(', ');
    const stories = () => `${victim} on A: ${story(eventsOn[0], victim)}; on B: ${story(eventsOn[1], victim)}`;
    // The killed agent: A and B applied the same downs and revivals, in the same order, up to A's
    // death (one log): a down (detector or ejected) and, if its ejection ban ended, a probation
    // revival and the detector's next down.
    const lifecycle = (events: ReceivedEvent[]) => events.filter((e) => (e.type === 'node.down' || e.type === 'node.alive') && e.data['nodeId'] === victim && (e.data['at'] as number) >= agentKilledAt).map((e) => `${e.type}(${String(e.data['cause'])})`);
    const onA = lifecycle(eventsOn[0]);
    const onB = lifecycle(eventsOn[1]);
    expect(onA.length, stories()).toBeGreaterThan(0);
    expect(onB.slice(0, onA.length), stories()).toEqual(onA);
    const downA = downsOf(eventsOn[0], victim, agentKilledAt);
    const downB = downsOf(eventsOn[1], victim, agentKilledAt);
    // B at the end: the agents that talked to A heartbeat to B (it hears them all).
    expect(end.nodes.filter((n) => n.state === 'alive').every((n) => n.lastHeartbeatAgoMs !== null && n.lastHeartbeatAgoMs < 2500)).toBe(true);
    expect(eventsOn[1].filter((e) => e.type === 'node.down' && e.data['nodeId'] !== victim).map((e) => e.data['nodeId']), 'other downs on B').toEqual([]);

    // A restarted (a new process, a new port): it replays the log, loads the directory, and shows
    // what B shows — the same plan, every agent in the same state — without taking a live one down.
    const restartedAt = Date.now();
    const again = await startCli('serve A again', serveArgs, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000, { process: true });
    const caughtUpMs = Date.now() - restartedAt;
    const states = (s: Status) => s.nodes.map((n) => `${n.id}:${n.state}`).join(' ');
    const [sa, sb] = await Promise.all([status(again.match), status(urls[1])]);
    expect(planOf(sa), 'the restarted A plans as B').toBe(planOf(sb));
    expect(sa.status).toBe(sb.status);
    // Agents' states, once no suspicion of a late heartbeat on a busy machine is in the way.
    let seen = '';
    await waitFor(() => `the restarted A to see the agents as B: ${seen}`, async () => {
      const [x, y] = await Promise.all([status(again.match), status(urls[1])]);
      seen = `${states(x)} vs ${states(y)}`;
      return states(x) === states(y) ? true : undefined;
    }, 5000);
    await sleep(1000);
    expect(eventsOn[1].filter((e) => e.type === 'node.down' && (e.data['at'] as number) >= restartedAt).map((e) => e.data['nodeId']), 'downs on B after A restarted').toEqual([]);

    const retried = attempts.filter((x) => x.on === 1 && attempts.some((y) => y.on === 0 && y.session === x.session));
    console.log(
      `chaos (2 orchestrators): ${REPLICATED.sessions} sessions in ${((Date.now() - loadStart) / 1000).toFixed(1)} s, all right; ` +
        `A killed ${((killedAt - loadStart) / 1000).toFixed(1)} s in with ${inflightAtKill.size} sessions in flight on it: ${interrupted.length} interrupted, 0 lost ` +
        `(${resumedFrom.filter((k) => k > 0).length} resumed on B from a checkpoint, at steps ${resumedFrom.join(' ')}; ${recomputed} steps recomputed in all, ${(recomputed / interrupted.length).toFixed(1)} per interrupted session, checkpoint every ${REPLICATED.checkpointEvery}), ` +
        `${refused.length} refused after its death, ${retried.length} retried on B, all completed; ` +
        `agent ${victim} down on A (${String(downA[0]?.data['cause'])}) and B (${String(downB[0]?.data['cause'])}) ${(downB[0]?.data['at'] as number) - agentKilledAt} ms after its kill; its lifecycle on A ${onA.join(' ')}, on B ${onB.join(' ')}; A restarted and serving ${caughtUpMs} ms after its start, same plan and agents as B`,
    );
    for (const o of [again, b]) {
      o.child.process.kill('SIGTERM');
      expect(await o.child.exited).toBe('exit 0');
    }
  }, 120_000);
});
