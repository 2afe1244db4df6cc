/**
 * A node that lost a session's state (docs/sessions.md, "A node that lost the state"): its
 * runner rejects with StateLostError (an agent's 409 UnknownSession). The same node is called
 * again at once, fresh, with the session's history as its replay; the route is kept and nothing
 * is charged.
 */
import { describe, expect, it } from 'vitest';
import { harness, nextInput, referenceRun } from './session-fixtures.js';

describe('a node that lost the session\'s state (StateLostError)', () => {
  it('is called again fresh with its replay, on the same route, charged nothing: the outputs are the reference\'s', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { backoffMs: 1000 });
    const route = session.route.stages.map((s) => s.nodeId);
    const victim = session.route.stages[1];
    if (victim === undefined) throw new Error('expected two stages');
    const outputs: number[] = [];
    let x = 5;
    for (let t = 0; t < 6; t++) {
      if (t === 3) {
        h.nodes.lose(victim.nodeId); // evicted: it answers "send it fresh" to a warm call
        let held = false; // until a fresh call rebuilds it
        h.behaviour.set(victim.nodeId, (call) => (held || call.fresh ? ((held = true), { kind: 'ok' }) : { kind: 'lost' }));
      }
      const started = h.timers.now();
      outputs.push(await h.drive(session.step(x)));
      if (t === 3) expect(h.timers.now() - started).toBeLessThan(1000); // no backoff: the node is fine
      x = nextInput(outputs[t] as number, t);
    }
    expect(outputs).toEqual(referenceRun(5, 6).outputs);
    const step3 = h.calls.filter((c) => c.step === 3 && c.stage.nodeId === victim.nodeId);
    expect(step3.map((c) => [c.fresh, c.replay.length])).toEqual([[false, 0], [true, 3]]);
    expect(session.route.stages.map((s) => s.nodeId)).toEqual(route);
    expect(h.swarm.node(victim.nodeId)).toMatchObject({ state: 'alive', failures: 0 });
    expect(session.stats().resumes).toBe(1);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });

  it('is a failure when it says so again, even to the fresh call: charged once, and the step goes around it', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { backoffMs: 0 });
    const victim = session.route.stages[0]?.nodeId as string;
    const y0 = await h.drive(session.step(1));
    h.behaviour.set(victim, () => ({ kind: 'lost' }));
    expect(await h.drive(session.step(nextInput(y0, 0)))).toBe(referenceRun(1, 2).outputs[1]);
    expect(h.calls.filter((c) => c.step === 1 && c.stage.nodeId === victim).map((c) => c.fresh)).toEqual([false, true]);
    expect(h.swarm.node(victim)).toMatchObject({ failures: 1 });
    expect(session.route.stages.some((s) => s.nodeId === victim)).toBe(false);
    session.close();
    expect(h.swarm.inFlight()).toBe(0);
  });
});
