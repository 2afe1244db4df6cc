import { describe, expect, it } from 'vitest';
import { SessionError, type Route } from '../../src/index.js';
import type { Session } from '../../src/sessions/session.js';
import { executeOnce, openSession } from '../../src/sessions/index.js';
import type { SessionHost } from '../../src/sessions/session-types.js';
import { config, harness, LAYERS, nextInput, referenceRun } from './session-fixtures.js';

/** Runs `steps` steps, feeding each output into the next input; returns the outputs. */
async function generate(h: ReturnType<typeof harness>, session: Session<number>, first: number, steps: number, onStep?: (t: number) => void): Promise<number[]> {
  const outputs: number[] = [];
  let x = first;
  for (let t = 0; t < steps; t++) {
    onStep?.(t);
    const y = await h.drive(session.step(x));
    outputs.push(y);
    x = nextInput(y, t);
  }
  return outputs;
}

async function rejection(promise: Promise<unknown>): Promise<SessionError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SessionError) return error;
    throw error;
  }
  throw new Error('expected a SessionError');
}

describe('swarm.session', () => {
  it('on a stopped swarm: session throws Stopped, execute and executeOnce reject with it (never a synchronous throw)', async () => {
    const h = harness();
    h.swarm.stop();
    expect(() => h.swarm.session({}, h.runStage)).toThrow(/the swarm is stopped/);
    expect(() => openSession(h.swarm, {}, h.runStage)).toThrow(/the swarm is stopped/);
    let pending: Promise<unknown> | undefined;
    expect(() => (pending = executeOnce(h.swarm, {}, 1, h.runStage))).not.toThrow();
    await expect(pending).rejects.toMatchObject({ name: 'SwarmError', code: 'Stopped' });
    await expect(h.swarm.execute({}, 1, h.runStage)).rejects.toMatchObject({ code: 'Stopped' });
  });

  it('runs every stage in order and resolves with the last output, the reference model exactly', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage);
    const route = session.route;
    expect(h.swarm.inFlight()).toBe(1);
    const outputs = await generate(h, session, 17, 5);
    expect(outputs).toEqual(referenceRun(17, 5).outputs);
    const first = h.calls.filter((c) => c.step === 0);
    expect(first.map((c) => c.stage.stageIndex)).toEqual(route.stages.map((_, i) => i));
    expect(first.map((c) => [c.stage.layerStart, c.stage.layerEnd])).toEqual(route.stages.map((s) => [s.layerStart, s.layerEnd]));
    expect(first.every((c) => c.stage.sessionId === session.id && c.stage.modelId === 'base')).toBe(true);
    expect(h.calls.every((c) => c.replay.length === 0)).toBe(true);
    const stats = session.close();
    expect(stats).toMatchObject({ steps: 5, resumes: 0, state: 'closed', freshLayerSteps: 5 * LAYERS });
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('resumes from the failed stage: earlier stages are not rerun, the replacement replays the history', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { backoffMs: 0 });
    const victim = session.route.stages[2];
    if (victim === undefined) throw new Error('expected at least three stages');
    let kill = false;
    h.behaviour.set(victim.nodeId, () => (kill ? { kind: 'reject' } : { kind: 'ok' }));
    const outputs = await generate(h, session, 5, 8, (t) => {
      kill = t === 4;
    });
    expect(outputs).toEqual(referenceRun(5, 8).outputs);
    const step4 = h.calls.filter((c) => c.step === 4);
    // Stages 0 and 1 ran once in step 4; the failed stage once; then the replacements.
    expect(step4.filter((c) => c.stage.layerStart < victim.layerStart).length).toBe(2);
    const replacements = step4.filter((c) => c.replay.length > 0);
    expect(replacements.length).toBeGreaterThan(0);
    for (const c of replacements) {
      expect(c.fresh).toBe(true);
      expect(c.replay.length).toBe(4);
      expect(c.stage.layerStart).toBeGreaterThanOrEqual(victim.layerStart);
      expect(c.stage.layerEnd).toBeLessThanOrEqual(victim.layerEnd);
    }
    // the replayed layers are the failed span's, nothing else
    const replayedLayers = replacements.reduce((s, c) => s + c.stage.layerEnd - c.stage.layerStart, 0);
    expect(replayedLayers).toBe(victim.layerEnd - victim.layerStart);
    // later calls carry no replay
    expect(h.calls.filter((c) => c.step > 4 && c.replay.length > 0)).toEqual([]);
    expect(session.route.stages.some((s) => s.nodeId === victim.nodeId)).toBe(false);
    expect(session.stats().resumes).toBe(1);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('fails a stage past stageTimeoutMs on the injected clock, and resumes', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { stageTimeoutMs: 500, backoffMs: 0 });
    const victim = session.route.stages[1];
    if (victim === undefined) throw new Error('expected two stages');
    await generate(h, session, 9, 2);
    h.behaviour.set(victim.nodeId, () => ({ kind: 'hang' }));
    const t0 = h.timers.now();
    const y = await h.drive(session.step(33));
    expect(h.timers.now() - t0).toBeGreaterThanOrEqual(500);
    expect(h.timers.now() - t0).toBeLessThan(600);
    const ref = referenceRun(9, 2);
    // the third step's reference: same history, then input 33
    const { DigestReference } = await import('../../src/core/digest-model.js');
    const r = new DigestReference(LAYERS);
    for (const x of ref.inputs) r.step(x);
    expect(y).toBe(r.step(33));
    session.close();
  });

  it('learns that a running stage\'s node went down from the swarm and resumes', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { aliveCheckMs: 20, backoffMs: 0 });
    const victim = session.route.stages[0];
    if (victim === undefined) throw new Error('expected a stage');
    h.behaviour.set(victim.nodeId, () => ({ kind: 'hang' }));
    h.timers.setTimeout(() => h.swarm.markDown(victim.nodeId), 50);
    const y = await h.drive(session.step(1));
    expect(y).toBe(referenceRun(1, 1).outputs[0]);
    expect(h.timers.now()).toBeLessThan(100);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('hears of a running stage\'s node going down the moment the swarm marks it, with no polling', async () => {
    const h = harness();
    // No poll and no timeout within reach: only the swarm's push can end the hung call.
    const session = h.swarm.session({}, h.runStage, { aliveCheckMs: 1_000_000, stageTimeoutMs: 1_000_000 });
    const victim = session.route.stages[0];
    if (victim === undefined) throw new Error('expected a stage');
    const starts: string[] = [];
    for (const p of ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4']) h.behaviour.set(p, () => (starts.push(`${p}@${h.timers.now()}`), { kind: 'ok' }));
    h.behaviour.set(victim.nodeId, () => ({ kind: 'hang' }));
    h.timers.setTimeout(() => h.swarm.markDown(victim.nodeId), 50);
    const y = await h.drive(session.step(1));
    expect(y).toBe(referenceRun(1, 1).outputs[0]);
    // The replacement starts at 50 exactly: no poll to wait for, and no backoff for a node the swarm counts down.
    const replacement = session.route.stages[0]?.nodeId ?? '?';
    expect(replacement).not.toBe(victim.nodeId);
    expect(starts[0]).toBe(`${replacement}@50`);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('hears of a running stage\'s node leaving the swarm (removeNode) at once', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { aliveCheckMs: 1_000_000, stageTimeoutMs: 1_000_000 });
    const victim = session.route.stages[1];
    if (victim === undefined) throw new Error('expected two stages');
    h.behaviour.set(victim.nodeId, () => ({ kind: 'hang' }));
    h.timers.setTimeout(() => h.swarm.removeNode(victim.nodeId), 40);
    const y = await h.drive(session.step(5));
    expect(y).toBe(referenceRun(5, 1).outputs[0]);
    expect(h.timers.now()).toBeLessThan(100);
    expect(session.route.stages.some((s) => s.nodeId === victim.nodeId)).toBe(false);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('routes around a busy node (NodeBusyError) and charges it nothing towards ejection, however often; routing learns it is full', async () => {
    for (const kind of ['busy', 'reject'] as const) {
      const h = harness();
      const victim = h.swarm.state().plan.pipelines[0]?.stages[1]?.nodeId as string;
      const before = h.swarm.state().nodes[victim]?.latencyMs;
      h.behaviour.set(victim, () => ({ kind }));
      // Twelve sessions of one step each at once: load spreads about half of them onto the victim's copy first.
      const sessions = Array.from({ length: 12 }, () => h.swarm.session({}, h.runStage, { backoffMs: 0 }));
      expect(await h.drive(Promise.all(sessions.map((session, i) => session.step(i))))).toEqual(sessions.map((_, i) => referenceRun(i, 1).outputs[0]));
      for (const session of sessions) session.close();
      const refusals = h.calls.filter((c) => c.stage.nodeId === victim).length;
      expect(refusals).toBeGreaterThanOrEqual(5); // past the ejection threshold (5 in a row)
      const node = h.swarm.node(victim);
      if (kind === 'busy') {
        expect(node).toMatchObject({ state: 'alive', failures: 0, ejections: 0 });
        expect(h.swarm.state().nodes[victim]?.latencyMs).toBeGreaterThan(before as number); // routing learns it is full
      } else expect(node?.ejections ?? 0).toBeGreaterThan(0); // the same refusals, as failures, eject it
      expect(h.swarm.inFlight()).toBe(0);
    }
  });

  it('stays on a busy node that no other copy can replace, after its backoff, and gets the answer when it frees up', async () => {
    const h = harness({ swarmConfig: { ...config, models: [{ id: 'base', layers: LAYERS, pipelines: 1 }] } });
    const session = h.swarm.session({}, h.runStage, { backoffMs: 10, retries: 5 });
    const victim = session.route.stages[0]?.nodeId as string;
    // No spare node either: only the route's own nodes are up.
    for (const id of Object.keys(h.swarm.state().nodes)) if (!session.route.stages.some((st) => st.nodeId === id)) h.swarm.markDown(id);
    let busy = 2;
    h.behaviour.set(victim, () => (busy-- > 0 ? { kind: 'busy' } : { kind: 'ok' }));
    expect(await h.drive(session.step(4))).toBe(referenceRun(4, 1).outputs[0]);
    expect(h.calls.filter((c) => c.stage.nodeId === victim).length).toBe(3);
    expect(session.stats().resumes).toBe(2);
    expect(h.swarm.node(victim)).toMatchObject({ state: 'alive', failures: 0 });
    session.close();
  });

  it('charges a failed stage to the node that failed it, not to the other nodes of its route', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { backoffMs: 0 });
    const victim = session.route.stages[1];
    if (victim === undefined) throw new Error('expected two stages');
    const latency = () => new Map(Object.entries(h.swarm.state().nodes).map(([id, t]) => [id, t.latencyMs]));
    const before = latency();
    let refused = false;
    h.behaviour.set(victim.nodeId, () => (refused ? { kind: 'ok' } : ((refused = true), { kind: 'reject' })));
    const y = await h.drive(session.step(3));
    expect(y).toBe(referenceRun(3, 1).outputs[0]);
    const after = latency();
    // The failure penalty (1000 ms) lands on the node that refused; the route's other nodes did nothing wrong.
    expect(after.get(victim.nodeId) ?? 0).toBeGreaterThan(before.get(victim.nodeId) ?? 0);
    for (const [id, ms] of before) if (id !== victim.nodeId) expect(after.get(id)).toBe(ms);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('rejects past the retry budget with every attempt and its node, and leaves no lease open', async () => {
    const h = harness();
    for (const p of ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4']) h.behaviour.set(p, () => ({ kind: 'reject' }));
    const session = h.swarm.session({}, h.runStage, { retries: 1, backoffMs: 10 });
    const error = await rejection(h.drive(session.step(1)));
    expect(error.code).toBe('RetryBudgetExhausted');
    expect(error.attempts.length).toBe(2);
    expect(error.attempts.every((a) => a.outcome === 'rejected' && a.nodeId.length > 0)).toBe(true);
    expect(new Set(error.attempts.map((a) => a.nodeId)).size).toBe(2);
    expect(error.message).toContain(error.attempts[0]?.nodeId ?? '?');
    expect(h.swarm.inFlight()).toBe(0);
    expect(session.stats().state).toBe('failed');
    expect((await rejection(session.step(2))).code).toBe('Closed');
  });

  it('backs off on the clock between resumes: 10 ms, then 20 ms', async () => {
    const h = harness({ swarmConfig: { models: [{ id: 'base', layers: 6, pipelines: 3 }] } });
    const times: number[] = [];
    for (const p of ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4']) h.behaviour.set(p, () => (times.push(h.timers.now()), { kind: 'reject' }));
    const session = h.swarm.session({}, h.runStage, { retries: 2, backoffMs: 10 });
    await rejection(h.drive(session.step(1)));
    expect(times.map((t) => t - (times[0] ?? 0))).toEqual([0, 10, 30]);
  });

  it('an abort signal cancels the running stage and fails the session without a lease', async () => {
    const h = harness();
    const controller = new AbortController();
    const signals: AbortSignal[] = [];
    const session = h.swarm.session({}, (_stage, _x, ctx) => {
      signals.push(ctx.signal);
      return new Promise<number>(() => {});
    }, { signal: controller.signal });
    h.timers.setTimeout(() => controller.abort(new Error('user gave up')), 30);
    const error = await rejection(h.drive(session.step(1)));
    expect(error.code).toBe('Aborted');
    expect(error.attempts.map((a) => a.outcome)).toEqual(['aborted']);
    expect(h.timers.now()).toBe(30);
    expect(signals[0]?.aborted).toBe(true);
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('hands the running stage a signal that aborts when the session gives up on it', async () => {
    const h = harness();
    const signals: AbortSignal[] = [];
    const session = h.swarm.session({}, (_stage, _x, ctx) => {
      signals.push(ctx.signal);
      return new Promise<number>(() => {});
    }, { stageTimeoutMs: 100, retries: 0 });
    const error = await rejection(h.drive(session.step(1)));
    expect(error.code).toBe('RetryBudgetExhausted');
    expect(error.attempts.map((a) => a.outcome)).toEqual(['timeout']);
    expect(signals.length).toBe(1);
    expect(signals[0]?.aborted).toBe(true);
  });

  it('fails with DeadlineExceeded when the session outlives deadlineMs', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { deadlineMs: 50 });
    await h.drive(session.step(1));
    h.behaviour.set(session.route.stages[0]?.nodeId ?? '', () => ({ kind: 'ok', ms: 200 }));
    const p = session.step(2);
    let at = -1;
    p.catch(() => {
      at = h.timers.now();
    });
    const latency = () => new Map(Object.entries(h.swarm.state().nodes).map(([id, t]) => [id, t.latencyMs]));
    const before = latency();
    const error = await rejection(h.drive(p));
    expect(error.code).toBe('DeadlineExceeded');
    expect(at).toBe(50);
    expect(h.swarm.inFlight()).toBe(0);
    // A request larger than its deadline is no node's failure: no failure penalty lands anywhere.
    expect(latency()).toEqual(before);
  });

  it('close() during a step rejects it with Closed and releases the lease once', async () => {
    const h = harness();
    const session = h.swarm.session({}, () => new Promise<number>(() => {}));
    const p = session.step(1);
    h.timers.setTimeout(() => session.close(), 10);
    const error = await rejection(h.drive(p));
    expect(error.code).toBe('Closed');
    expect(h.swarm.inFlight()).toBe(0);
    expect(session.stats().state).toBe('closed');
  });

  it('fails with ReplayOutputsMissing when a chained replacement does not hand back its replay outputs', async () => {
    const h = harness();
    // A runner that forgets context.replayed().
    const forgetful = (stage: Parameters<typeof h.runStage>[0], x: number, ctx: Parameters<typeof h.runStage>[2]) =>
      h.runStage(stage, x, { ...ctx, signal: ctx.signal, replayed: () => {} });
    const session = h.swarm.session({}, forgetful, { backoffMs: 0 });
    await generate(h, session, 3, 2);
    // The route's stage [5, 9) is re-served by two nodes of the other copy, cut at layer 8:
    // the session never saw layer 8 as a boundary.
    const victim = session.route.stages.find((s) => s.layerStart === 5 && s.layerEnd === 9);
    if (victim === undefined) throw new Error(`the fixture's route changed: ${JSON.stringify(session.route.stages)}`);
    h.behaviour.set(victim.nodeId, () => ({ kind: 'reject' }));
    const error = await rejection(h.drive(session.step(77)));
    expect(error.code).toBe('ReplayOutputsMissing');
    expect(error.message).toContain('layer 8');
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('rejects a second step while one runs', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage);
    const p = session.step(1);
    expect((await rejection(session.step(2))).code).toBe('StepInProgress');
    await h.drive(p);
    session.close();
  });

  it('past maxHistory, a failure that needs the dropped inputs fails with HistoryTruncated (default)', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { maxHistory: 3, backoffMs: 0 });
    await generate(h, session, 2, 4);
    h.behaviour.set(session.route.stages[1]?.nodeId ?? '', () => ({ kind: 'reject' }));
    const error = await rejection(h.drive(session.step(99)));
    expect(error.code).toBe('HistoryTruncated');
    expect(h.swarm.inFlight()).toBe(0);
  });

  it("past maxHistory with historyOverflow 'slide', the replay is the last maxHistory inputs", async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { maxHistory: 3, historyOverflow: 'slide', backoffMs: 0 });
    const outputs = await generate(h, session, 2, 5);
    const victim = session.route.stages[1];
    h.behaviour.set(victim?.nodeId ?? '', () => ({ kind: 'reject' }));
    await h.drive(session.step(nextInput(outputs[4] ?? 0, 4)));
    const replays = h.calls.filter((c) => c.replay.length > 0);
    expect(replays.length).toBeGreaterThan(0);
    expect(replays.every((c) => c.replay.length === 3)).toBe(true);
    session.close();
  });

  it('fails with Unrecoverable when no live node holds the remaining layers, and holds no lease', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { backoffMs: 0 });
    const victim = session.route.stages[0];
    if (victim === undefined) throw new Error('expected a stage');
    // Every holder of layer 0 goes down.
    for (const p of h.swarm.state().plan.pipelines) {
      const holder = p.stages[0]?.nodeId;
      if (holder !== undefined && holder !== victim.nodeId) h.swarm.markDown(holder);
    }
    h.behaviour.set(victim.nodeId, () => ({ kind: 'reject' }));
    const error = await rejection(h.drive(session.step(1)));
    expect(error.code).toBe('Unrecoverable');
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('restart mode reruns the whole step on another route, every stage replaying from layer 0', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { onFailure: 'restart', backoffMs: 0 });
    const victim = session.route.stages[2];
    let kill = false;
    h.behaviour.set(victim?.nodeId ?? '', () => (kill ? { kind: 'reject' } : { kind: 'ok' }));
    const outputs = await generate(h, session, 4, 6, (t) => {
      kill = t === 3;
    });
    expect(outputs).toEqual(referenceRun(4, 6).outputs);
    const step3 = h.calls.filter((c) => c.step === 3);
    const replayed = step3.filter((c) => c.replay.length === 3).reduce((s, c) => s + c.stage.layerEnd - c.stage.layerStart, 0);
    expect(replayed).toBe(LAYERS);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('refuses bad options with InvalidInput', () => {
    const h = harness();
    expect(() => h.swarm.session({}, h.runStage, { retries: -1 })).toThrow(SessionError);
    expect(() => h.swarm.session({}, h.runStage, { stageTimeoutMs: 0 })).toThrow(/stageTimeoutMs/);
    expect(() => h.swarm.session({}, 'nope' as never)).toThrow(/runStage/);
    expect(h.swarm.inFlight()).toBe(0);
  });
});

describe('sessions and a stopped swarm', () => {
  it('a step after stop fails without a stray error, and close() stays quiet', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage);
    await h.drive(session.step(1));
    h.swarm.stop();
    await expect(h.drive(session.step(2))).rejects.toThrow(/stopped/);
    expect(session.stats().state).toBe('failed');
    expect(() => session.close()).not.toThrow();
  });

  it('execute reports a routing failure as a rejected promise, not a throw', async () => {
    const h = harness();
    for (const p of h.swarm.state().plan.pipelines) for (const s of p.stages) h.swarm.markDown(s.nodeId);
    const pending = h.swarm.execute({}, 1, h.runStage);
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).rejects.toThrow();
  });
});

describe('openSession on a host of your own', () => {
  it('tells the stageFailed hook which node failed and how, and learns of a node going down through watch', async () => {
    const h = harness();
    const failures: string[] = [];
    const watchers = new Map<string, () => void>();
    // Its own lease table: the session needs nothing of the Swarm but this interface.
    const open = new Set<string>();
    let seq = 0;
    const lease = (route: Route) => {
      const id = `own-${++seq}`;
      open.add(id);
      return { ...route, lease: { id, modelId: route.modelId, nodes: route.stages.map((st) => st.nodeId), expiresAt: Infinity } };
    };
    const host: SessionHost = {
      route: (r) => lease(h.swarm.route(r)),
      reserve: lease,
      release: (l) => void open.delete(l.id),
      state: () => h.swarm.state(),
      clock: h.timers,
      stageFailed: (nodeId, outcome) => void failures.push(`${nodeId}:${outcome}`),
      watch: (nodeId, onDown) => {
        watchers.set(nodeId, onDown);
        return () => watchers.delete(nodeId);
      },
    };
    const session = openSession(host, {}, h.runStage, { aliveCheckMs: 1_000_000, backoffMs: 0 });
    const victim = session.route.stages[1];
    if (victim === undefined) throw new Error('expected two stages');
    h.behaviour.set(victim.nodeId, () => ({ kind: 'hang' }));
    h.timers.setTimeout(() => {
      h.swarm.markDown(victim.nodeId);
      watchers.get(victim.nodeId)?.();
    }, 5);
    const y = await h.drive(session.step(8));
    expect(y).toBe(referenceRun(8, 1).outputs[0]);
    expect(failures).toEqual([`${victim.nodeId}:node-down`]);
    expect(watchers.size).toBe(0);
    expect(open.size).toBe(1); // the resumed route's lease; the first was released on the failure
    session.close();
    expect(open.size).toBe(0);
  });
});

describe('swarm.execute', () => {
  it('is a session of one step: the output, then no lease open', async () => {
    const h = harness();
    const y = await h.drive(h.swarm.execute({}, 41, h.runStage));
    expect(y).toBe(referenceRun(41, 1).outputs[0]);
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('resumes a failed stage too, and rejects cleanly past the budget', async () => {
    const h = harness();
    const first = h.swarm.route().stages[1]?.nodeId ?? '';
    h.behaviour.set(first, () => ({ kind: 'reject' }));
    const y = await h.drive(h.swarm.execute({}, 41, h.runStage, { backoffMs: 0 }));
    expect(y).toBe(referenceRun(41, 1).outputs[0]);
    for (const p of ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4']) h.behaviour.set(p, () => ({ kind: 'reject' }));
    const error = await rejection(h.drive(h.swarm.execute({}, 41, h.runStage, { backoffMs: 0, retries: 1 })));
    expect(error.code).toBe('RetryBudgetExhausted');
    expect(h.swarm.inFlight()).toBe(0);
  });
});
