import { describe, expect, it } from 'vitest';
import { PlanError, RoutingError, SwarmError } from '../../src/core/errors.js';
import type { NodeProfile } from '../../src/core/types.js';
import { createSwarm, ManualClock, type SwarmConfig } from '../../src/runtime/index.js';
import type { LeasedRoute } from '../../src/runtime/types.js';
import { caught } from './fixtures.js';

/** Two single-node copies of one slot each. */
const twins: NodeProfile[] = [
  { id: 'a', memoryGb: 8, score: 4, latencyMs: 10, slots: 1 },
  { id: 'b', memoryGb: 8, score: 4, latencyMs: 10, slots: 1 },
];
const config: SwarmConfig = { models: [{ id: 'base', layers: 8, pipelines: 2 }], leaseTtlMs: 1000 };

/** What a promise ends with, once the microtasks have run: its value, its error, or 'pending'. */
async function outcome<T>(p: Promise<T>): Promise<T | Error | 'pending'> {
  let result: T | Error | 'pending' = 'pending';
  p.then(
    (v) => (result = v),
    (e: Error) => (result = e),
  );
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return result;
}

function rejection(value: unknown, code: string): RoutingError {
  expect(value).toBeInstanceOf(RoutingError);
  expect((value as RoutingError).code).toBe(code);
  return value as RoutingError;
}

describe('swarm.admit with room', () => {
  it('leases at once on a swarm without slots, which never saturates', async () => {
    const swarm = createSwarm([{ id: 'a', memoryGb: 8 }, { id: 'b', memoryGb: 8 }], config, { clock: new ManualClock(), seed: 1 });
    const routes = await Promise.all([1, 2, 3, 4, 5].map(() => swarm.admit({})));
    expect(swarm.inFlight()).toBe(5);
    const s = swarm.saturation();
    expect(s).toMatchObject({ saturated: false, capacity: null, saturation: 0, inFlight: 5, queued: 0 });
    for (const r of routes) swarm.release(r.lease);
    expect(swarm.saturation().inFlight).toBe(0);
    swarm.stop();
  });

  it('spreads over the copies with room and counts route({ reserve: true }) in the saturation', async () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const first = await swarm.admit();
    const reserved = swarm.route({}, { reserve: true });
    expect(reserved.pipelineId).not.toBe(first.pipelineId);
    const s = swarm.saturation();
    expect(s.saturated).toBe(true);
    expect(s.capacity).toBe(2);
    expect(s.copies.map((c) => [c.capacity, c.inFlight, c.saturation, c.room])).toEqual([
      [1, 1, 1, false],
      [1, 1, 1, false],
    ]);
    swarm.release(reserved.lease);
    expect(swarm.saturation()).toMatchObject({ saturated: false, saturation: 0, inFlight: 1 });
    swarm.stop();
  });
});

describe('headroom', () => {
  it('admits each node past its slots by the factor: twins of one slot with headroom 2 hold four', async () => {
    const swarm = createSwarm(twins, { ...config, admission: { headroom: 2 } }, { clock: new ManualClock(), seed: 1 });
    const held = await Promise.all([1, 2, 3, 4].map(() => swarm.admit()));
    expect(held.map((r) => r.stages[0]?.nodeId).sort()).toEqual(['a', 'a', 'b', 'b']);
    const fifth = outcome(swarm.admit());
    expect(await fifth).toBe('pending');
    expect(swarm.saturation()).toMatchObject({ saturated: true, saturation: 1, queued: 1 });
    expect((caught(() => createSwarm(twins, { ...config, admission: { headroom: 0.5 } })) as Error).message).toMatch(/"admission.headroom"/);
    swarm.stop();
    await fifth.catch(() => undefined);
  });
});

describe('capacity', () => {
  it('is min over the stages of slots × (copy time ÷ stage time), and a shared node shares its slots', () => {
    // One copy over two nodes: p holds 4 layers at score 1 (time 4), q holds 4 at score 4 (time 1).
    const profiles: NodeProfile[] = [
      { id: 'p', memoryGb: 4, score: 1, slots: 2 },
      { id: 'q', memoryGb: 4, score: 4, slots: 1 },
    ];
    const swarm = createSwarm(profiles, { models: [{ id: 'base', layers: 8 }] }, { clock: new ManualClock(), seed: 1 });
    const [copy] = swarm.saturation().copies;
    // p: 2 × 5/4 = 2.5; q: 1 × 5/1 = 5 → 2.5.
    expect(copy?.capacity).toBeCloseTo(2.5, 9);
    const leases = [swarm.route({}, { reserve: true }), swarm.route({}, { reserve: true })];
    expect(swarm.saturation().copies[0]?.saturation).toBeCloseTo(0.8, 9); // p holds 2 × 4/5 of its 2 slots
    expect(swarm.saturation().saturated).toBe(true); // a third needs 0.8 more of p: 2.4 > 2
    for (const l of leases) swarm.release(l.lease);
    swarm.stop();
  });

  it('refuses a profile whose slots is not a positive integer, naming it', () => {
    const error = caught(() => createSwarm([{ id: 'a', memoryGb: 8, slots: 0 }], config));
    expect(error).toBeInstanceOf(PlanError);
    expect((error as Error).message).toMatch(/node "a": "slots" must be a positive integer/);
  });
});

describe('swarm.admit when every copy is full', () => {
  it('queues, and a release serves the highest band first, first come first served within it', async () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    const held = [await swarm.admit(), await swarm.admit()];
    const low1 = swarm.admit({}, { priority: 0 });
    const low2 = swarm.admit({}, { priority: 0 });
    const high = swarm.admit({}, { priority: 5 });
    expect(swarm.saturation()).toMatchObject({ queued: 3, bands: [{ priority: 5, queued: 1 }, { priority: 0, queued: 2 }] });
    expect(await outcome(high)).toBe('pending');
    swarm.release((held[0] as LeasedRoute).lease);
    const h = (await outcome(high)) as LeasedRoute;
    expect(h.lease.id).toMatch(/lease/);
    expect(await outcome(low1)).toBe('pending');
    swarm.release((held[1] as LeasedRoute).lease);
    expect(await outcome(low1)).toHaveProperty('lease');
    expect(await outcome(low2)).toBe('pending');
    swarm.release(h.lease);
    expect(await outcome(low2)).toHaveProperty('lease');
    expect(swarm.saturation().queued).toBe(0);
    swarm.stop();
  });

  it('sheds a priority below 0 with Saturated and a retry-after estimate', async () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    await swarm.admit();
    await swarm.admit();
    const error = rejection(await outcome(swarm.admit({}, { priority: -1 })), 'Saturated');
    expect(error.retryAfterMs).toBeGreaterThan(0);
    expect(error.message).toMatch(/priority -1 is sheddable/);
    expect(swarm.saturation().queued).toBe(0);
    swarm.stop();
  });

  it('bounds the queue: a full queue refuses an arrival, or pushes out the newest of a lower band', async () => {
    const swarm = createSwarm(twins, { ...config, admission: { queueSize: 2 } }, { clock: new ManualClock(), seed: 1 });
    await swarm.admit();
    await swarm.admit();
    const a = swarm.admit({}, { priority: 0 });
    const b = swarm.admit({}, { priority: 0 });
    rejection(await outcome(swarm.admit({}, { priority: 0 })), 'Saturated');
    const c = swarm.admit({}, { priority: 1 });
    expect(rejection(await outcome(b), 'Saturated').message).toMatch(/pushed out/);
    expect(await outcome(a)).toBe('pending');
    expect(await outcome(c)).toBe('pending');
    expect(swarm.saturation().queued).toBe(2);
    swarm.stop();
    const stopped = await outcome(a);
    expect(stopped).toBeInstanceOf(SwarmError);
    expect((stopped as SwarmError).code).toBe('Stopped');
  });

  it('gives up at the deadline on the clock (DeadlineExceeded), and at once for deadlineMs 0', async () => {
    const clock = new ManualClock();
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    await swarm.admit();
    await swarm.admit();
    rejection(await outcome(swarm.admit({}, { deadlineMs: 0 })), 'DeadlineExceeded');
    const late = swarm.admit({}, { deadlineMs: 100 });
    const later = swarm.admit({}, { deadlineMs: 300 });
    clock.advance(99);
    expect(await outcome(late)).toBe('pending');
    clock.advance(1);
    rejection(await outcome(late), 'DeadlineExceeded');
    expect(await outcome(later)).toBe('pending');
    expect(swarm.saturation().queued).toBe(1);
    clock.advance(200);
    rejection(await outcome(later), 'DeadlineExceeded');
    expect(swarm.saturation().queued).toBe(0);
    swarm.stop();
  });

  it('withdraws a request whose signal aborts (Aborted), and refuses one already aborted', async () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    await swarm.admit();
    const held = await swarm.admit();
    const controller = new AbortController();
    const waiting = swarm.admit({}, { signal: controller.signal });
    const next = swarm.admit({});
    controller.abort(new Error('client gone'));
    const error = rejection(await outcome(waiting), 'Aborted');
    expect((error.cause as Error).message).toBe('client gone');
    rejection(await outcome(swarm.admit({}, { signal: controller.signal })), 'Aborted');
    swarm.release(held.lease);
    expect(await outcome(next)).toHaveProperty('lease');
    swarm.stop();
  });

  it('serves the queue when a lease expires, and when a node comes back', async () => {
    const clock = new ManualClock();
    const swarm = createSwarm(twins, config, { clock, seed: 1 });
    await swarm.admit();
    await swarm.admit();
    const waiting = swarm.admit();
    clock.advance(1000); // both leases expire
    expect(swarm.saturation().inFlight).toBe(1); // the sweep ended them and served the waiter
    swarm.release(((await outcome(waiting)) as LeasedRoute).lease);
    // Node b down, a full: the next waits until b is back.
    swarm.markDown('b');
    expect((await swarm.admit()).stages.map((s) => s.nodeId)).toEqual(['a']);
    const afterRevival = swarm.admit();
    expect(await outcome(afterRevival)).toBe('pending');
    swarm.markAlive('b');
    const route = (await outcome(afterRevival)) as LeasedRoute;
    expect(route.stages.map((s) => s.nodeId)).toEqual(['b']);
    swarm.stop();
  });

  it('puts a resumed request at the head of its band, and orders by deadline when asked', async () => {
    const swarm = createSwarm(twins, { ...config, admission: { order: 'deadline' } }, { clock: new ManualClock(), seed: 1 });
    const held = [await swarm.admit(), await swarm.admit()];
    const noDeadline = swarm.admit({});
    const far = swarm.admit({}, { deadlineMs: 900 });
    const near = swarm.admit({}, { deadlineMs: 500 });
    const resumed = swarm.admit({}, { resumed: true });
    const order: string[] = [];
    for (const [name, p] of [['noDeadline', noDeadline], ['far', far], ['near', near], ['resumed', resumed]] as const) void p.then(() => order.push(name));
    for (const h of held) swarm.release(h.lease);
    await outcome(resumed);
    const r1 = (await outcome(resumed)) as LeasedRoute;
    const r2 = (await outcome(near)) as LeasedRoute;
    swarm.release(r1.lease);
    swarm.release(r2.lease);
    await outcome(far);
    expect(order).toEqual(['resumed', 'near', 'far', 'noDeadline']);
    swarm.stop();
  });

  it('serves a band under its minimum share before a higher band', async () => {
    const swarm = createSwarm(twins, { ...config, admission: { shares: { '0': 0.5 }, window: 4 } }, { clock: new ManualClock(), seed: 1 });
    const leases = [await swarm.admit({}, { priority: 9 }), await swarm.admit({}, { priority: 9 })]; // the window: two of band 9
    const served: number[] = [];
    for (const priority of [9, 9, 9, 0, 0]) {
      void swarm.admit({}, { priority }).then(
        (r) => {
          served.push(priority);
          leases.push(r);
        },
        () => undefined, // the rest are refused at stop
      );
    }
    for (let i = 0; i < 3; i++) {
      swarm.release((leases.shift() as LeasedRoute).lease);
      await outcome(Promise.resolve());
    }
    // Band 0 is under its half of the last 4 admissions twice (0 of 2, 1 of 3), then band 9 is first again.
    expect(served).toEqual([0, 0, 9]);
    swarm.stop();
  });
});

describe('arguments', () => {
  it('refuses an unknown or mistyped option, naming the key, and changes nothing', async () => {
    const swarm = createSwarm(twins, config, { clock: new ManualClock(), seed: 1 });
    expect(rejection(await outcome(swarm.admit({}, { priorty: 1 } as never)), 'InvalidRequest').message).toMatch(/unknown key "priorty"/);
    expect(rejection(await outcome(swarm.admit({}, { deadlineMs: -1 })), 'InvalidRequest').message).toMatch(/"deadlineMs"/);
    expect(rejection(await outcome(swarm.admit({}, { signal: {} as never })), 'InvalidRequest').message).toMatch(/"signal"/);
    expect(rejection(await outcome(swarm.admit({ tokns: 1 } as never)), 'InvalidRequest').message).toMatch(/unknown key "tokns"/);
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('refuses a bad admission config, naming the field', () => {
    const error = caught(() => createSwarm(twins, { ...config, admission: { queueSize: -1 } }));
    expect(error).toBeInstanceOf(SwarmError);
    expect((error as Error).message).toMatch(/"admission.queueSize"/);
    expect((caught(() => createSwarm(twins, { ...config, admission: { shares: { '0': 0.7, '1': 0.6 } } })) as Error).message).toMatch(/sum to at most 1/);
    expect((caught(() => createSwarm(twins, { ...config, admission: { qeue: 1 } as never })) as Error).message).toMatch(/unknown key "qeue"/);
  });
});
