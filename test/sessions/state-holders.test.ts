/**
 * The session-close hook `dropSession`: every node a stage call of the session went to is told,
 * once, when the session ends however it ends, and only after the running call was given up.
 */
import { describe, expect, it } from 'vitest';
import { SessionError } from '../../src/index.js';
import { StateHolders } from '../../src/sessions/state-holders.js';
import { harness } from './session-fixtures.js';

type Drop = { nodeId: string; sessionId: string; runningAborted: boolean | undefined };

async function settle(p: Promise<unknown>): Promise<unknown> {
  return p.then(() => undefined, (error: unknown) => error);
}

describe('dropSession (the session-close hook)', () => {
  it('on close: each node of the route told once, in route order, with the session id', async () => {
    const h = harness();
    const drops: Drop[] = [];
    const session = h.swarm.session({}, h.runStage, { dropSession: (nodeId, sessionId) => drops.push({ nodeId, sessionId, runningAborted: undefined }) });
    await h.drive(session.step(1));
    await h.drive(session.step(2));
    expect(drops).toEqual([]); // nothing while the session is open
    const nodes = session.route.stages.map((s) => s.nodeId);
    session.close();
    session.close();
    expect(drops.map((d) => d.nodeId)).toEqual(nodes);
    expect(new Set(drops.map((d) => d.sessionId))).toEqual(new Set([session.id]));
  });

  it('on an abort: the running call is given up first, then its node and the earlier ones are told', async () => {
    const h = harness();
    const controller = new AbortController();
    const signals = new Map<string, AbortSignal>();
    const drops: Drop[] = [];
    let calls = 0;
    const session = h.swarm.session<number>({}, (stage, x, ctx) => {
      signals.set(stage.nodeId, ctx.signal);
      // The first stage answers; the second never does (a long generation on its node).
      return ++calls === 1 ? Promise.resolve(x + 1) : new Promise<number>(() => {});
    }, { signal: controller.signal, dropSession: (nodeId, sessionId) => drops.push({ nodeId, sessionId, runningAborted: signals.get(nodeId)?.aborted }) });
    const [first, second] = session.route.stages.map((s) => s.nodeId);
    h.timers.setTimeout(() => controller.abort(new Error('client went away')), 20);
    const error = await settle(h.drive(session.step(1)));
    expect(error).toBeInstanceOf(SessionError);
    expect((error as SessionError).code).toBe('Aborted');
    expect(drops.map((d) => d.nodeId)).toEqual([first, second]);
    expect(drops[1]?.runningAborted).toBe(true); // the running call was given up before its node was told
    expect(h.swarm.inFlight()).toBe(0);
    session.close(); // after a failure: nothing more
    expect(drops).toHaveLength(2);
  });

  it('on a failure past the retry budget and at the deadline: every node called, the failed ones too', async () => {
    const h = harness();
    const drops: string[] = [];
    const session = h.swarm.session({}, h.runStage, { retries: 1, backoffMs: 0, dropSession: (nodeId) => drops.push(nodeId) });
    await h.drive(session.step(1));
    const before = new Set(h.calls.map((c) => c.stage.nodeId));
    for (const id of ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4']) h.behaviour.set(id, () => ({ kind: 'reject' }));
    const error = await settle(h.drive(session.step(2)));
    expect((error as SessionError).code).toBe('RetryBudgetExhausted');
    const called = new Set(h.calls.map((c) => c.stage.nodeId));
    expect(called.size).toBeGreaterThan(before.size); // the session resumed on another node, which failed too
    expect(new Set(drops)).toEqual(called);
    expect(drops).toHaveLength(called.size);

    const late = harness();
    const lateDrops: string[] = [];
    const timed = late.swarm.session({}, () => new Promise<number>(() => {}), { deadlineMs: 40, dropSession: (nodeId) => lateDrops.push(nodeId) });
    const expired = await settle(late.drive(timed.step(1)));
    expect((expired as SessionError).code).toBe('DeadlineExceeded');
    expect(lateDrops).toEqual([timed.route.stages[0]?.nodeId]);
  });

  it('a hook that throws does not stop the others being told, nor the lease being released', async () => {
    const h = harness();
    const told: string[] = [];
    const session = h.swarm.session({}, h.runStage, {
      dropSession: (nodeId) => {
        told.push(nodeId);
        throw new Error('agent unreachable');
      },
    });
    await h.drive(session.step(1));
    expect(() => session.close()).not.toThrow();
    expect(told).toEqual(session.route.stages.map((s) => s.nodeId));
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('a session never called tells nobody; a bad hook is refused with InvalidInput naming it', () => {
    const h = harness();
    const drops: string[] = [];
    h.swarm.session({}, h.runStage, { dropSession: (nodeId) => drops.push(nodeId) }).close();
    expect(drops).toEqual([]);
    expect(() => h.swarm.session({}, h.runStage, { dropSession: 'yes' as never })).toThrow(/session option "dropSession" must be a function/);
    const holders = new StateHolders(() => 's', undefined);
    holders.add('a1');
    expect(() => holders.drop()).not.toThrow();
  });
});
