import { describe, expect, it } from 'vitest';
import { SwarmError } from '../../src/core/errors.js';
import type { NodeProfile } from '../../src/core/types.js';
import { createSwarm, ManualClock, type Swarm, type SwarmConfig } from '../../src/runtime/index.js';
import { openSession } from '../../src/sessions/index.js';
import type { SwarmEmitted } from '../../machines/swarm.machine.js';
import { caught } from './fixtures.js';
import { expectedRequestMs } from '../../src/runtime/stall-expectation.js';
import { SEEN_EVERY_MS } from '../../src/runtime/telemetry-intake.js';

/** Two copies on disjoint nodes: gpu+desktop and laptop+tablet. */
const profiles: NodeProfile[] = [
  { id: 'gpu', memoryGb: 6, score: 10, latencyMs: 4 },
  { id: 'desktop', memoryGb: 6, score: 8, latencyMs: 5 },
  { id: 'laptop', memoryGb: 6, score: 4, latencyMs: 9 },
  { id: 'tablet', memoryGb: 6, score: 3, latencyMs: 12 },
];
const config: SwarmConfig = { models: [{ id: 'base', layers: 12, pipelines: 2 }] };

function setup(extra: Partial<SwarmConfig> = {}) {
  const clock = new ManualClock();
  const swarm = createSwarm(profiles, { ...config, ...extra }, { clock, seed: 1 });
  const events: SwarmEmitted[] = [];
  swarm.on('*', (e) => events.push(e));
  /** Every node but the silent ones beats once a second for `seconds`. */
  const beat = (seconds: number, silent: readonly string[] = []) => {
    for (let i = 0; i < seconds; i++) {
      clock.advance(1000);
      for (const p of profiles) if (!silent.includes(p.id)) swarm.heartbeat(p.id);
    }
  };
  return { clock, swarm, events, beat };
}

const nodesOf = (swarm: Swarm) => swarm.route().stages.map((s) => s.nodeId);

describe('failure detection in the swarm', () => {
  it('without heartbeats behaves as before: no timer, nothing detected in a day of silence', () => {
    const { clock, swarm, events } = setup();
    swarm.report('gpu', { load: 0.5 });
    const lease = swarm.route({}, { reserve: true }).lease;
    swarm.release(lease, { latencyMs: 20 });
    clock.advance(24 * 3_600_000);
    expect(clock.pending()).toBe(0);
    expect(swarm.status()).toBe('healthy');
    expect(events).toEqual([]);
    swarm.stop();
  });

  it('takes a silent node down through the same node.down as markDown: suspected, then down with its rescue', () => {
    const { swarm, events, beat } = setup();
    beat(20);
    const served = nodesOf(swarm);
    expect(served).toContain('gpu');
    beat(10, ['gpu']);
    const kinds = events.map((e) => e.type);
    expect(kinds).toEqual(['node.suspected', 'node.down', 'status.changed']);
    const down = events[1] as Extract<SwarmEmitted, { type: 'node.down' }>;
    expect(down).toMatchObject({ nodeId: 'gpu', cause: 'detector', rescue: { nodeId: 'gpu', status: 'degraded', unrecoverable: [] } });
    expect(down.rescue.recoveries[0]?.from.stages.map((s) => s.nodeId)).toContain('gpu');
    expect(down.rescue.recoveries[0]?.route.stages.map((s) => s.nodeId)).not.toContain('gpu');
    expect(events[2]).toEqual({ type: 'status.changed', status: 'degraded' });
    expect(swarm.state().nodes['gpu']?.alive).toBe(false);
    expect(nodesOf(swarm)).not.toContain('gpu');
    swarm.stop();
  });

  it('routes around a suspect node while a copy without one is intact, and back once it is heard from', () => {
    const { clock, swarm, beat } = setup();
    beat(20);
    expect(nodesOf(swarm)).toContain('gpu');
    clock.advance(4400); // phi of gpu past the suspect level (4), below the threshold (8)
    for (const p of profiles) if (p.id !== 'gpu') swarm.heartbeat(p.id);
    expect(swarm.state().nodes['gpu']).toMatchObject({ alive: true, suspect: true });
    expect(nodesOf(swarm)).not.toContain('gpu');
    expect(swarm.routeByScan().pipelineId).toBe(swarm.route().pipelineId);
    swarm.heartbeat('gpu');
    expect(swarm.state().nodes['gpu']?.suspect).toBeUndefined();
    expect(nodesOf(swarm)).toContain('gpu');
    swarm.stop();
  });

  it('still routes through a suspect node when every intact copy has one', () => {
    const { clock, swarm, beat } = setup();
    beat(20);
    clock.advance(4400); // gpu and laptop, one in each copy, fall silent together
    for (const id of ['desktop', 'tablet']) swarm.heartbeat(id);
    expect(['gpu', 'laptop'].map((id) => swarm.state().nodes[id]?.suspect)).toEqual([true, true]);
    expect(nodesOf(swarm)).toContain('gpu'); // the cheaper copy, as without suspicion
    swarm.report('laptop', { load: 0.1 }); // a proof of life: laptop is trusted again
    expect(swarm.state().nodes['laptop']?.suspect).toBeUndefined();
    expect(nodesOf(swarm)).toContain('laptop');
    clock.advance(1000); // gpu goes down: no longer suspect, and no route through it
    expect(swarm.state().nodes['gpu']).toMatchObject({ alive: false });
    expect(swarm.state().nodes['gpu']?.suspect).toBeUndefined();
    swarm.stop();
  });

  it('the detector rescue is the one markDown computes on the same swarm', () => {
    const a = setup();
    const b = setup();
    a.beat(20);
    b.beat(20);
    b.beat(10, ['gpu']);
    const manual = a.swarm.markDown('gpu');
    const detected = b.events.find((e) => e.type === 'node.down') as Extract<SwarmEmitted, { type: 'node.down' }>;
    expect(detected.rescue.recoveries.map((r) => [r.strategy, r.route.pipelineId, r.from.pipelineId])).toEqual(manual.recoveries.map((r) => [r.strategy, r.route.pipelineId, r.from.pipelineId]));
    expect(detected.rescue.status).toBe(manual.status);
    a.swarm.stop();
    b.swarm.stop();
  });

  it('a heartbeat from a node the detector took down brings it back through node.alive', () => {
    const { swarm, events, beat } = setup();
    beat(20);
    beat(10, ['gpu']);
    events.length = 0;
    swarm.heartbeat('gpu');
    expect(events).toEqual([
      { type: 'node.alive', nodeId: 'gpu', cause: 'heartbeat' },
      { type: 'status.changed', status: 'healthy' },
    ]);
    expect(swarm.status()).toBe('healthy');
    expect(swarm.state().nodes['gpu']?.alive).toBe(true);
    swarm.stop();
  });

  it('the orchestrator wins: heartbeats never undo markDown, even over a detector down', () => {
    const { swarm, beat } = setup();
    beat(5);
    swarm.markDown('laptop');
    beat(30);
    expect(swarm.state().nodes['laptop']?.alive).toBe(false);
    beat(10, ['gpu']);
    expect(swarm.state().nodes['gpu']?.alive).toBe(false);
    expect(swarm.markDown('gpu')).toMatchObject({ recoveries: [], unrecoverable: [] }); // already down: no rescue, but now manual
    beat(5);
    expect(swarm.state().nodes['gpu']?.alive).toBe(false);
    swarm.markAlive('gpu');
    swarm.markAlive('laptop');
    expect(swarm.status()).toBe('healthy');
    swarm.stop();
  });

  it('markAlive of a detected-down node revives it, and the detector watches it again', () => {
    const { swarm, clock, beat } = setup();
    beat(5);
    beat(10, ['gpu']);
    swarm.markAlive('gpu');
    expect(swarm.state().nodes['gpu']?.alive).toBe(true);
    clock.advance(10_000);
    expect(swarm.state().nodes['gpu']?.alive).toBe(false);
    swarm.stop();
  });

  it('report and a successful release count as proof of life of a watched node, but start nothing', () => {
    const { swarm, clock } = setup();
    swarm.heartbeat('gpu');
    for (let i = 0; i < 60; i++) {
      clock.advance(1000);
      if (i % 2 === 0) swarm.report('gpu', { load: 0.2 });
      else swarm.release(swarm.route({}, { reserve: true }).lease, { latencyMs: 10 });
      swarm.report('laptop', { load: 0.1 }); // never heartbeated: not watched
    }
    expect(swarm.status()).toBe('healthy');
    clock.advance(10_000);
    expect(swarm.state().nodes['gpu']?.alive).toBe(false);
    expect(swarm.state().nodes['laptop']?.alive).toBe(true);
    swarm.report('gpu', { load: 0.3 }); // a report from it: back
    expect(swarm.state().nodes['gpu']?.alive).toBe(true);
    expect(swarm.state().nodes['gpu']?.load).toBeCloseTo(0.3 * 0.3 + 0.7 * 0.2, 9);
    swarm.stop();
  });

  it('releases restart a watched node\'s wait at most every SEEN_EVERY_MS, and clear a suspicion at once', () => {
    const clock = new ManualClock();
    let seen = 0;
    const swarm = createSwarm(profiles, config, { clock, seed: 1, inspect: (e) => {
      if (e.type === '@xstate.event' && (e.event as { type: string }).type === 'node.seen') seen++;
    } });
    for (let i = 0; i < 20; i++) {
      clock.advance(1000);
      for (const p of profiles) swarm.heartbeat(p.id);
    }
    const release = () => swarm.release(swarm.route({}, { reserve: true }).lease, { latencyMs: 5 });
    // 200 releases over 200 ms through the cheapest copy (gpu, desktop): a proof of life each, sent 4 times per node.
    for (let i = 0; i < 200; i++) {
      clock.advance(1);
      release();
    }
    expect(seen).toBe(2 * Math.ceil(200 / SEEN_EVERY_MS));
    // Silent past the suspect level, then a release 1 ms after the last one: the suspicion is cleared at once.
    for (let i = 0; i < 4; i++) {
      clock.advance(1000);
      for (const p of profiles) if (p.id !== 'gpu') swarm.heartbeat(p.id);
    }
    clock.advance(400);
    expect(swarm.state().nodes['gpu']?.suspect).toBe(true);
    const before = seen;
    swarm.report('gpu', { load: 0.1 });
    expect(seen).toBe(before + 1);
    expect(swarm.state().nodes['gpu']?.suspect).toBeUndefined();
    swarm.stop();
  });

  it('a node proving life well within a short wait (under SEEN_EVERY_MS) is neither suspected nor taken down', () => {
    // Heartbeats every 20 ms: the suspect wait is about 27 ms, the down one 3 ms after.
    const { clock, swarm, events } = setup({ failureDetector: { expectedIntervalMs: 20, acceptablePauseMs: 0, minStdDevMs: 2 } });
    for (let i = 0; i < 50; i++) {
      clock.advance(20);
      for (const p of profiles) swarm.heartbeat(p.id);
    }
    events.length = 0;
    // gpu's heartbeats stop, its reports arrive every 8 ms (a third of its wait): each one restarts it.
    for (let i = 0; i < 100; i++) {
      clock.advance(8);
      if (i % 2 === 1) for (const p of profiles) if (p.id !== 'gpu') swarm.heartbeat(p.id);
      swarm.report('gpu', { load: 0.1 });
    }
    expect(events.filter((e) => 'nodeId' in e && e.nodeId === 'gpu')).toEqual([]);
    expect(swarm.state().nodes['gpu']?.alive).toBe(true);
    swarm.stop();
  });

  it('uses SwarmConfig.failureDetector', () => {
    const fast = setup({ failureDetector: { acceptablePauseMs: 0, threshold: 3 } });
    fast.beat(20);
    fast.clock.advance(1500);
    expect(fast.swarm.state().nodes['gpu']?.alive).toBe(false);
    fast.swarm.stop();
  });

  it('refuses heartbeats on a clock without timers, and bad detector settings', () => {
    const swarm = createSwarm(profiles, config, { clock: { now: () => 0 }, seed: 1 });
    const error = caught(() => swarm.heartbeat('gpu'));
    expect(error).toBeInstanceOf(SwarmError);
    expect((error as SwarmError).code).toBe('InvalidInput');
    expect((error as SwarmError).message).toMatch(/clock has only now\(\)/);
    swarm.stop();
    expect(() => createSwarm(profiles, { ...config, failureDetector: { threshold: 0 } })).toThrow(/failureDetector "threshold" must be a finite number > 0/);
    expect(() => createSwarm(profiles, { ...config, ejection: { maxEjectedShare: 2 } })).toThrow(/ejection "maxEjectedShare" must be a number in \[0, 1\]/);
    expect(() => createSwarm(profiles, config, { clock: { now: () => 0, setTimeout: () => 1 } as never })).toThrow(/both setTimeout\(fn, ms\) and clearTimeout\(handle\)/);
  });

  it('unsubscribes a handler', () => {
    const { swarm } = setup();
    const seen: string[] = [];
    const off = swarm.on('node.down', (e) => seen.push(`${e.nodeId}:${e.cause}`));
    swarm.markDown('gpu');
    off();
    swarm.markDown('laptop');
    expect(seen).toEqual(['gpu:manual']);
    swarm.stop();
  });

  it('emits status.changed on every status change, stopped last', () => {
    const { swarm, events } = setup();
    for (const p of profiles) swarm.markDown(p.id);
    swarm.markAlive('gpu');
    swarm.stop();
    expect(events.filter((e) => e.type === 'status.changed').map((e) => (e as { status: string }).status)).toEqual(['degraded', 'failed', 'degraded', 'stopped']);
  });
});

describe('passive ejection in the swarm', () => {
  const failOn = (swarm: Swarm, node: string, times: number) => {
    for (let i = 0; i < times; i++) {
      const lease = swarm.route({}, { reserve: true }).lease;
      swarm.release(lease, { ok: false, failedNode: lease.nodes.includes(node) ? node : (lease.nodes[0] as string) });
    }
  };

  it('ejects a node at 5 consecutive failures, bans it 15 s, then brings it back on probation', () => {
    const { swarm, clock, events } = setup();
    const node = nodesOf(swarm)[0] as string;
    const other = profiles.find((p) => !nodesOf(swarm).includes(p.id))?.id as string;
    swarm.markDown(other); // only the node's copy is intact: every route goes through it
    failOn(swarm, node, 4);
    expect(swarm.state().nodes[node]?.alive).toBe(true);
    failOn(swarm, node, 1);
    expect(swarm.state().nodes[node]?.alive).toBe(false);
    const down = events.find((e) => e.type === 'node.down' && e.nodeId === node) as Extract<SwarmEmitted, { type: 'node.down' }>;
    expect(down).toMatchObject({ nodeId: node, cause: 'ejected', rescue: { status: 'degraded' } });
    expect(down.rescue.recoveries[0]?.from.stages.map((s) => s.nodeId)).toContain(node);
    clock.advance(14_999);
    expect(swarm.state().nodes[node]?.alive).toBe(false);
    clock.advance(1);
    expect(swarm.state().nodes[node]?.alive).toBe(true);
    expect(events.filter((e) => e.type === 'node.alive')).toEqual([{ type: 'node.alive', nodeId: node, cause: 'probation' }]);
    // On probation: the first failure ejects it again, for twice as long.
    failOn(swarm, node, 1);
    expect(swarm.state().nodes[node]?.alive).toBe(false);
    clock.advance(29_999);
    expect(swarm.state().nodes[node]?.alive).toBe(false);
    clock.advance(1);
    expect(swarm.state().nodes[node]?.alive).toBe(true);
    swarm.stop();
  });

  it('a success resets the count; without failedNode every node of the route counts the failure', () => {
    const { swarm } = setup();
    const route = nodesOf(swarm);
    swarm.markDown(profiles.find((p) => !route.includes(p.id))?.id as string); // every route takes `route`
    const release = (ok: boolean) => swarm.release(swarm.route({}, { reserve: true }).lease, ok ? { latencyMs: 5 } : { ok: false });
    for (let i = 0; i < 4; i++) release(false);
    release(true);
    for (let i = 0; i < 4; i++) release(false);
    expect(route.every((n) => swarm.state().nodes[n]?.alive)).toBe(true);
    // The 5th in a row: every node of the route counted it. With one node already down, the cap
    // (half of the three that would serve) ejects one of them and keeps the other serving.
    release(false);
    expect(route.map((n) => swarm.state().nodes[n]?.alive)).toEqual([false, true]);
    swarm.stop();
  });

  it('never ejects more than half the nodes: a bad client cannot empty the swarm', () => {
    const { swarm } = setup();
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 5; i++) {
        let lease;
        try {
          lease = swarm.route({}, { reserve: true }).lease;
        } catch {
          break;
        }
        swarm.release(lease, { ok: false });
      }
    }
    const down = profiles.filter((p) => swarm.state().nodes[p.id]?.alive === false);
    expect(down.length).toBe(2);
    expect(swarm.status()).toBe('degraded');
    swarm.stop();
  });

  it('refuses a failedNode outside the lease', () => {
    const { swarm } = setup();
    const lease = swarm.route({}, { reserve: true }).lease;
    const other = profiles.find((p) => !lease.nodes.includes(p.id))?.id as string;
    expect(() => swarm.release(lease, { ok: false, failedNode: other })).toThrow(/"failedNode" must be one of the lease's nodes/);
    swarm.stop();
  });
});

describe('requests that do not come back', () => {
  const suspectOf = (swarm: Swarm, ids: readonly string[]) => ids.map((id) => swarm.state().nodes[id]?.suspect === true);
  /** The second copy much dearer, so the first stays the cheapest with a request in flight. */
  const slowSecond = (swarm: Swarm) => ['laptop', 'tablet'].forEach((id) => swarm.report(id, { latencyMs: 100 }));

  it('makes a watched node suspect once its requests are overdue 4 times their expected latency, until one comes back', () => {
    const { clock, swarm, beat } = setup();
    beat(20);
    slowSecond(swarm);
    const hung = swarm.route({}, { reserve: true });
    expect(hung.lease.nodes).toEqual(['gpu', 'desktop']); // expected 4 + 5 ms (declared)
    clock.advance(36); // 4 × 9 ms: not yet
    expect(nodesOf(swarm)).toContain('gpu');
    expect(suspectOf(swarm, ['gpu', 'desktop'])).toEqual([false, false]);
    clock.advance(1);
    expect(swarm.routeByScan().stages.map((s) => s.nodeId)).toEqual(['laptop', 'tablet']); // the scan sees the stall too
    expect(nodesOf(swarm)).toEqual(['laptop', 'tablet']);
    expect(suspectOf(swarm, ['gpu', 'desktop', 'laptop'])).toEqual([true, true, false]);
    expect(swarm.state().nodes['gpu']?.alive).toBe(true); // suspect, not down: no event, no rescue
    swarm.release(hung.lease, { latencyMs: 40 });
    expect(suspectOf(swarm, ['gpu', 'desktop'])).toEqual([false, false]);
    expect(nodesOf(swarm)).toContain('gpu');
    swarm.stop();
  });

  it('scales the wait with the work asked: a request of many tokens is overdue only past 4 times its latency plus its work', () => {
    const { clock, swarm, beat } = setup();
    beat(20);
    slowSecond(swarm);
    const big = swarm.route({ tokens: 8 }, { reserve: true });
    expect(big.lease.nodes).toEqual(['gpu', 'desktop']);
    // 4 + 5 ms of latency, plus 8 tokens × 100 ms × (the node's share of the 12 layers) ÷ its score.
    const expectMs = expectedRequestMs(big.stages, (n) => swarm.state().nodes[n], 12, 8);
    const work = big.stages.reduce((sum, s) => sum + (8 * 100 * (s.layerEnd - s.layerStart)) / 12 / (s.nodeId === 'gpu' ? 10 : 8), 0);
    expect(expectMs).toBeCloseTo(9 + work, 9);
    clock.advance(37); // overdue for a request of no tokens (4 × 9 ms), not for this one
    expect(suspectOf(swarm, ['gpu', 'desktop'])).toEqual([false, false]);
    expect(nodesOf(swarm)).toContain('gpu');
    clock.advance(Math.floor(4 * expectMs) - 37);
    expect(nodesOf(swarm)).toContain('gpu');
    clock.advance(1);
    expect(nodesOf(swarm)).toEqual(['laptop', 'tablet']);
    expect(suspectOf(swarm, ['gpu', 'desktop'])).toEqual([true, true]);
    swarm.stop();
  });

  it('still routes when every copy is overdue, and a failed release does not clear it', () => {
    const { clock, swarm, beat } = setup();
    beat(20);
    slowSecond(swarm);
    const first = swarm.route({}, { reserve: true });
    clock.advance(40);
    const second = swarm.route({}, { reserve: true });
    expect(second.lease.nodes).toEqual(['laptop', 'tablet']);
    clock.advance(801); // 4 × 200 ms for the second copy
    expect(nodesOf(swarm)).toEqual(['gpu', 'desktop']); // every copy suspect: the cheaper serves
    expect(suspectOf(swarm, ['gpu', 'desktop', 'laptop', 'tablet'])).toEqual([true, true, true, true]);
    const third = swarm.route({}, { reserve: true });
    swarm.release(third.lease, { ok: false, failedNode: 'gpu' }); // no answer, no progress
    expect(suspectOf(swarm, ['gpu'])).toEqual([true]);
    swarm.release(first.lease, { ok: false }); // its last lease gone: nothing left to wait for
    expect(suspectOf(swarm, ['gpu', 'desktop', 'laptop'])).toEqual([false, false, true]);
    swarm.release(second.lease, {});
    expect(suspectOf(swarm, ['laptop', 'tablet'])).toEqual([false, false]);
    swarm.stop();
  });

  it('waits for no node without heartbeats, and for no session', () => {
    const { clock, swarm, beat } = setup();
    const lease = swarm.route({}, { reserve: true }).lease; // no heartbeat yet: nobody watched
    clock.advance(1000);
    expect(nodesOf(swarm)).toContain('gpu');
    swarm.release(lease, {});
    beat(20);
    const session = openSession(swarm, {}, async (_stage, x: number) => x); // a session's steps do not tell the swarm
    clock.advance(500);
    for (const p of profiles) swarm.heartbeat(p.id);
    expect(nodesOf(swarm)).toContain('gpu');
    expect(suspectOf(swarm, ['gpu', 'desktop'])).toEqual([false, false]);
    session.close();
    swarm.stop();
  });
});

describe('detection lifecycle', () => {
  it('a node added later is watched with the swarm settings, and stop() leaves no timer behind', () => {
    const clock = new ManualClock();
    const swarm = createSwarm(profiles, { ...config, failureDetector: { acceptablePauseMs: 500 } }, { clock, seed: 1 });
    swarm.addNode({ id: 'spare', memoryGb: 6, score: 1, latencyMs: 30 });
    for (let i = 0; i < 10; i++) {
      clock.advance(1000);
      for (const id of [...profiles.map((p) => p.id), 'spare']) swarm.heartbeat(id);
    }
    expect(clock.pending()).toBe(5);
    clock.advance(3000); // past 1 s + 500 ms + five deviations (4.5 s with the default pause): everyone is down
    expect(swarm.status()).toBe('failed');
    expect(swarm.state().nodes['spare']?.alive).toBe(false);
    swarm.heartbeat('gpu');
    swarm.markDown('desktop');
    swarm.removeNode('laptop');
    swarm.stop();
    expect(clock.pending()).toBe(0);
  });
});
