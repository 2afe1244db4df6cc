/**
 * Admitted sessions (`priority`): the first step waits for `swarm.admit` under the session's
 * deadline and signal; a resumed step waits at the head of its band (docs/admission.md).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, SessionError, type NodeProfile, type SwarmConfig } from '../../src/index.js';
import { createSessionSwarm, type SessionStage } from '../../src/sessions/index.js';
import { prefixCache } from '../../src/prefix/index.js';
import type { LeasedRoute } from '../../src/runtime/types.js';

/** Two single-node copies of one slot each. */
const twins: NodeProfile[] = [
  { id: 'a', memoryGb: 8, score: 4, slots: 1 },
  { id: 'b', memoryGb: 8, score: 4, slots: 1 },
];
const config: SwarmConfig = { models: [{ id: 'base', layers: 8, pipelines: 2 }], leaseTtlMs: 60_000 };

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** What a promise ended with so far. */
function watch<T>(p: Promise<T>): { readonly value: () => T | Error | 'pending' } {
  let v: T | Error | 'pending' = 'pending';
  p.then(
    (x) => (v = x),
    (e: Error) => (v = e),
  );
  return { value: () => v };
}

describe('an admitted session', () => {
  it('waits for a slot at its first step, then runs and holds it until closed', async () => {
    const clock = new ManualClock();
    const swarm = createSessionSwarm(twins, config, { clock, seed: 1 });
    const held = [await swarm.admit(), await swarm.admit()];
    const session = swarm.session({}, async (_s: SessionStage, x: number) => x + 1, { priority: 0 });
    expect(session.id).toMatch(/^session-lease-\d+$/);
    const step = watch(session.step(1));
    await flush();
    expect(step.value()).toBe('pending');
    expect(swarm.saturation().queued).toBe(1);
    swarm.release((held[0] as LeasedRoute).lease);
    await flush();
    expect(step.value()).toBe(2);
    expect(swarm.inFlight()).toBe(2); // the session's lease and the other admit's
    expect(await session.step(5)).toBe(6); // it holds its slot: no wait
    session.close();
    expect(swarm.inFlight()).toBe(1);
    swarm.stop();
  });

  it("fails DeadlineExceeded at the session's deadline, Aborted on its signal, Closed on close, holding no lease", async () => {
    const clock = new ManualClock();
    const swarm = createSessionSwarm(twins, config, { clock, seed: 1 });
    await swarm.admit();
    await swarm.admit();
    const late = watch(swarm.session({}, async (_s: SessionStage, x: number) => x, { priority: 0, deadlineMs: 100 }).step(1));
    const controller = new AbortController();
    const aborted = watch(swarm.session({}, async (_s: SessionStage, x: number) => x, { priority: 0, signal: controller.signal }).step(1));
    const closing = swarm.session({}, async (_s: SessionStage, x: number) => x, { priority: 0 });
    const closed = watch(closing.step(1));
    await flush();
    expect(swarm.saturation().queued).toBe(3);
    clock.advance(100);
    controller.abort();
    closing.close();
    await flush();
    expect([late.value(), aborted.value(), closed.value()].map((e) => (e as SessionError).code)).toEqual(['DeadlineExceeded', 'Aborted', 'Closed']);
    expect(late.value()).toBeInstanceOf(SessionError);
    expect(swarm.saturation()).toMatchObject({ queued: 0, inFlight: 2 });
    swarm.stop();
  });

  it('resumes a failed step at the head of its band, before requests that queued earlier', async () => {
    const clock = new ManualClock();
    const swarm = createSessionSwarm(twins, config, { clock, seed: 1 });
    let fail: ((e: Error) => void) | undefined;
    const session = swarm.session(
      {},
      (_stage: SessionStage, x: number) => (fail === undefined ? new Promise<number>((_, reject) => (fail = reject)) : Promise.resolve(x * 10)),
      { priority: 0, backoffMs: 0 },
    );
    const first = watch(session.step(1)); // admitted on one copy, its stage call running
    await flush();
    const other = await swarm.admit(); // the other copy
    const earlier1 = watch(swarm.admit({}, { priority: 0 }));
    const earlier2 = watch(swarm.admit({}, { priority: 0 }));
    (fail as (e: Error) => void)(new Error('refused'));
    await flush();
    // Its failed lease served the first waiter; its resumed route (the other copy) waits at the head of the band.
    expect(earlier1.value()).toHaveProperty('lease');
    expect([first.value(), earlier2.value()]).toEqual(['pending', 'pending']);
    swarm.release(other.lease);
    await flush();
    expect(first.value()).toBe(10);
    expect(earlier2.value()).toBe('pending');
    expect(session.stats().resumes).toBe(1);
    session.close();
    await flush();
    expect(earlier2.value()).toHaveProperty('lease');
    swarm.stop();
  });

  it('is refused on a degraded route as an unadmitted session is (SessionError Unrecoverable, no lease held), unless allowDegraded', async () => {
    const four: NodeProfile[] = ['n1', 'n2', 'n3', 'n4'].map((id) => ({ id, memoryGb: 8, score: 1 }));
    const withReserve: SwarmConfig = { models: [{ id: 'base', layers: 12, pipelines: 2, fallback: 'tiny' }, { id: 'tiny', layers: 2, kind: 'expert' }], furtherCopies: false };
    const swarm = createSessionSwarm(four, withReserve, { clock: new ManualClock(), seed: 1 });
    swarm.markDown('n1');
    swarm.markDown('n3'); // no live node holds base's first layers: only a degraded route is left
    const refused = swarm.session({}, async (_s: SessionStage, x: number) => x + 1, { priority: 0 });
    const error = await refused.step(1).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(SessionError);
    expect(error).toMatchObject({ code: 'Unrecoverable' });
    expect((error as Error).message).toMatch(/degraded route.*allowDegraded/);
    expect(swarm.inFlight()).toBe(0);
    const allowed = swarm.session({}, async (_s: SessionStage, x: number) => x + 1, { priority: 0, allowDegraded: true });
    expect(await allowed.step(1)).toBeGreaterThan(1);
    allowed.close();
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('records its prompt in the prefix-cache index only under the lease it is admitted to, not on its placeholder route', async () => {
    const roomy = twins.map((n) => ({ ...n, memoryGb: 12 })); // room for the KV caches the index counts
    const swarm = createSessionSwarm(roomy, { ...config, models: config.models.map((m) => ({ ...m, kvReserveGb: 0.25 })) }, { clock: new ManualClock(), seed: 1, prefixCache: prefixCache() });
    const held = await swarm.admit(); // one copy busy: the session waits
    const prompt = 'A long shared system prompt, the same for every turn of this conversation. '.repeat(20);
    const session = swarm.session({ prompt }, async (_s: SessionStage, x: number) => x + 1, { priority: 0 });
    expect(swarm.prefixStats()).toMatchObject({ requests: 0, blocks: 0 }); // opened: nothing recorded yet
    expect(await session.step(1)).toBe(2);
    const stats = swarm.prefixStats();
    expect(stats.requests).toBe(1); // once, under its lease
    const where = session.route.stages.map((s) => s.nodeId);
    expect(swarm.route({ prompt: `${prompt}!` }).stages.map((s) => s.nodeId)).toEqual(where); // the copy it ran on holds it
    session.close();
    swarm.release(held.lease);
    swarm.stop();
  });
});
