/**
 * A busy answer (docs/sessions.md, "A busy node") is charged to no node and is no proof of life
 * either, for the busy node nor for the nodes of its route that were never called; routing learns
 * the node is full.
 */
import { describe, expect, it } from 'vitest';
import { swarmSessionHost } from '../../src/sessions/index.js';
import { harness } from './session-fixtures.js';

describe('a busy answer (NodeBusyError)', () => {
  it('is no proof of life for the nodes of its route that were never called: their failure counts stay', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { retries: 0, backoffMs: 0 });
    const [a, b] = session.route.stages.map((s) => s.nodeId) as [string, string];
    const host = swarmSessionHost(h.swarm);
    // Three failures of b (the ejection threshold is five in a row), as garbage answers would have charged.
    for (let i = 0; i < 3; i++) host.release(host.reserve(session.route).lease, { ok: false, failedNode: b });
    expect(h.swarm.node(b)?.failures).toBe(3);
    h.behaviour.set(a, () => ({ kind: 'busy' }));
    await expect(h.drive(session.step(1))).rejects.toMatchObject({ code: 'RetryBudgetExhausted' });
    expect(h.calls.some((c) => c.stage.nodeId === b)).toBe(false); // b was never called
    expect(h.swarm.node(b)?.failures).toBe(3); // a's 503 says nothing of b
  });

  it('does not clear the busy node\'s own failure count: four garbage answers and a 503, over and over, never reach the ejection', async () => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage, { retries: 0, backoffMs: 0 });
    const a = session.route.stages[0]?.nodeId as string;
    const host = swarmSessionHost(h.swarm);
    for (let i = 0; i < 4; i++) host.release(host.reserve(session.route).lease, { ok: false, failedNode: a });
    h.behaviour.set(a, () => ({ kind: 'busy' }));
    await expect(h.drive(session.step(1))).rejects.toMatchObject({ code: 'RetryBudgetExhausted' });
    expect(h.swarm.node(a)?.failures).toBe(4); // charged nothing, credited nothing
  });

  it('teaches routing something: a node answering only 503 is not the first choice of every next session', async () => {
    const h = harness();
    const probe = h.swarm.session({}, h.runStage, { backoffMs: 0 });
    const a = probe.route.stages[0]?.nodeId as string;
    probe.close();
    h.behaviour.set(a, () => ({ kind: 'busy' }));
    let first = 0;
    for (let i = 0; i < 40; i++) {
      const s = h.swarm.session({}, h.runStage, { backoffMs: 25 });
      if (s.route.stages.some((st) => st.nodeId === a)) first++;
      expect(await h.drive(s.step(i))).toBeTypeOf('number'); // answered by the other copy, after a backoff
      s.close();
    }
    // As a node that rejects, a busy one is avoided after its answer (the latency penalty), not charged.
    expect(first).toBeLessThan(20);
  });
});
