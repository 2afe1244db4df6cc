import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { downAfterMs, isNodeAlive, nodeMachine, suspectAfterMs, type NodeInput, type NodeReport } from '../../machines/node.machine.js';
import { firstHistory, phi, resolvePhiOptions } from '../../src/core/phi.js';
import { historyValues } from '../../src/core/heartbeat-history.js';
import { ManualClock } from '../../src/runtime/clock.js';

function startNode(input: Partial<NodeInput> = {}) {
  const clock = new ManualClock();
  const actor = createActor(nodeMachine, { input: { id: 'gpu', ...input }, clock });
  const reports: NodeReport[] = [];
  actor.on('*', (e) => reports.push(e));
  actor.start();
  const beat = () => actor.send({ type: 'node.heartbeat', at: clock.now() });
  const value = () => actor.getSnapshot().value;
  return { actor, clock, reports, beat, value };
}

/** Heartbeats every `every` ms for `n` beats. */
function steady(n: ReturnType<typeof startNode>, beats: number, every = 1000) {
  for (let i = 0; i < beats; i++) {
    n.clock.advance(every);
    n.beat();
  }
}

describe('node failure detector', () => {
  it('stays off until the first heartbeat: a silent node without heartbeats is never suspected', () => {
    const n = startNode();
    expect(n.value()).toEqual('unmonitored');
    n.clock.advance(24 * 3600_000);
    expect(n.value()).toEqual('unmonitored');
    expect(n.clock.pending()).toBe(0);
    expect(n.reports).toEqual([]);
  });

  it('goes alive → suspect → down when phi crosses each level, on the actor clock', () => {
    const n = startNode();
    n.beat();
    steady(n, 30);
    const ctx = n.actor.getSnapshot().context;
    const suspectAt = suspectAfterMs(ctx);
    const downAt = suspectAt + downAfterMs(ctx);
    const h = ctx.health.history as NonNullable<typeof ctx.health.history>;
    const settings = ctx.settings.phi;
    expect(phi(suspectAt, h, settings)).toBeCloseTo(settings.suspectThreshold, 6);
    expect(phi(downAt, h, settings)).toBeCloseTo(settings.threshold, 6);
    n.clock.advance(Math.ceil(suspectAt) - 1);
    expect(n.value()).toEqual('watching');
    n.clock.advance(1);
    expect(n.value()).toEqual('suspect');
    expect(n.reports).toEqual([{ type: 'node.suspected', nodeId: 'gpu' }]);
    n.clock.advance(Math.ceil(downAt) - Math.ceil(suspectAt));
    expect(n.value()).toEqual({ down: 'detected' });
    expect(n.reports.at(-1)).toEqual({ type: 'node.down', nodeId: 'gpu', cause: 'detector' });
    // Steady 1 s heartbeats with no jitter: the deviation is floored at 100 ms; down ≈ 4.5 s.
    expect(downAt).toBeGreaterThan(4000);
    expect(downAt).toBeLessThan(5000);
  });

  it('a heartbeat in suspect goes back to watching and restarts the wait', () => {
    const n = startNode();
    n.beat();
    steady(n, 10);
    n.clock.advance(Math.ceil(suspectAfterMs(n.actor.getSnapshot().context)));
    expect(n.value()).toEqual('suspect');
    n.beat();
    expect(n.value()).toEqual('watching');
    n.clock.advance(3000);
    expect(n.value()).toEqual('watching');
  });

  it('a heartbeat brings a node the detector took down back, reporting it, without measuring the gap', () => {
    const n = startNode();
    n.beat();
    steady(n, 5);
    const before = historyValues(n.actor.getSnapshot().context.health.history!);
    n.clock.advance(60_000);
    expect(n.value()).toEqual({ down: 'detected' });
    n.beat();
    expect(n.value()).toEqual('watching');
    expect(n.reports.at(-1)).toEqual({ type: 'node.alive', nodeId: 'gpu', cause: 'heartbeat' });
    expect(historyValues(n.actor.getSnapshot().context.health.history!)).toEqual(before);
    steady(n, 1);
    expect(historyValues(n.actor.getSnapshot().context.health.history!)).toEqual([...before, 1000]);
  });

  it('seeds the history as Akka does at the first heartbeat and records each gap after', () => {
    const n = startNode();
    n.beat();
    expect(historyValues(n.actor.getSnapshot().context.health.history!)).toEqual(historyValues(firstHistory(resolvePhiOptions())));
    n.clock.advance(1234);
    n.beat();
    expect(historyValues(n.actor.getSnapshot().context.health.history!).at(-1)).toBe(1234);
  });

  it('the orchestrator wins: a manual down is not undone by heartbeats, and a manual down of a detected node sticks', () => {
    const n = startNode();
    n.beat();
    n.actor.send({ type: 'node.down' });
    expect(n.value()).toEqual({ down: 'manual' });
    n.beat();
    expect(n.value()).toEqual({ down: 'manual' });
    n.actor.send({ type: 'node.alive' });
    expect(n.value()).toEqual('watching');
    n.clock.advance(60_000);
    expect(n.value()).toEqual({ down: 'detected' });
    n.actor.send({ type: 'node.down', cause: 'detector' }); // the Swarm's echo: no change
    expect(n.value()).toEqual({ down: 'detected' });
    n.actor.send({ type: 'node.down', cause: 'manual' });
    expect(n.value()).toEqual({ down: 'manual' });
    n.beat();
    expect(n.value()).toEqual({ down: 'manual' });
  });

  it('uses the swarm-wide settings: a lower threshold detects sooner', () => {
    const strict = startNode({ phi: { threshold: 2, acceptablePauseMs: 0 } });
    strict.beat();
    steady(strict, 10);
    strict.clock.advance(2000);
    expect(strict.value()).toEqual({ down: 'detected' });
  });
});

describe('node passive ejection', () => {
  const fail = (n: ReturnType<typeof startNode>) => n.actor.send({ type: 'node.outcome', ok: false });
  const succeed = (n: ReturnType<typeof startNode>) => n.actor.send({ type: 'node.outcome', ok: true });

  it('asks to be ejected at the 5th consecutive failure; a success resets the count', () => {
    const n = startNode();
    for (let i = 0; i < 4; i++) fail(n);
    succeed(n);
    for (let i = 0; i < 4; i++) fail(n);
    expect(n.reports).toEqual([]);
    fail(n);
    expect(n.reports).toEqual([{ type: 'node.eject', nodeId: 'gpu' }]);
    expect(n.value()).toEqual('unmonitored'); // the Swarm decides
  });

  it('a failure does not restart the detector timers', () => {
    const n = startNode();
    n.beat();
    steady(n, 10);
    const downAt = suspectAfterMs(n.actor.getSnapshot().context) + downAfterMs(n.actor.getSnapshot().context);
    n.clock.advance(downAt - 100);
    fail(n);
    n.clock.advance(200);
    expect(n.value()).toEqual({ down: 'detected' });
  });

  it('ejected: banned 15 s, back on probation, ejected again at the first failure for twice as long', () => {
    const n = startNode();
    n.actor.send({ type: 'node.down', cause: 'ejected' });
    expect(n.value()).toEqual({ down: 'ejected' });
    n.clock.advance(14_999);
    expect(n.value()).toEqual({ down: 'ejected' });
    n.clock.advance(1);
    expect(n.value()).toEqual('unmonitored');
    expect(n.actor.getSnapshot().context.health.probation).toBe(true);
    expect(n.reports.at(-1)).toEqual({ type: 'node.alive', nodeId: 'gpu', cause: 'probation' });
    fail(n);
    expect(n.reports.at(-1)).toEqual({ type: 'node.eject', nodeId: 'gpu' });
    n.actor.send({ type: 'node.down', cause: 'ejected' });
    n.clock.advance(29_999);
    expect(n.value()).toEqual({ down: 'ejected' });
    n.clock.advance(1);
    expect(isNodeAlive(n.actor.getSnapshot())).toBe(true);
    succeed(n);
    expect(n.actor.getSnapshot().context.health).toMatchObject({ probation: false, ejections: 0, failures: 0 });
  });

  it('caps the ban, and keeps its counters bounded', () => {
    const n = startNode({ ejection: { banMs: 1000, maxBanMs: 4000 } });
    for (let i = 0; i < 10; i++) {
      n.actor.send({ type: 'node.down', cause: 'ejected' });
      n.clock.advance(4000);
      expect(isNodeAlive(n.actor.getSnapshot())).toBe(true);
    }
    expect(n.actor.getSnapshot().context.health.ejections).toBe(3);
  });

  it('a manual down during a ban cancels it: only node.alive brings the node back', () => {
    const n = startNode();
    n.actor.send({ type: 'node.down', cause: 'ejected' });
    n.actor.send({ type: 'node.down' });
    n.clock.advance(10 * 60_000);
    expect(n.value()).toEqual({ down: 'manual' });
    expect(n.clock.pending()).toBe(0);
  });

  it('ignores outcomes and telemetry while down', () => {
    const n = startNode();
    n.actor.send({ type: 'node.down' });
    for (let i = 0; i < 10; i++) fail(n);
    expect(n.actor.getSnapshot().context.health.failures).toBe(0);
    expect(n.reports).toEqual([]);
  });
});
