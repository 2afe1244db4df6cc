import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createSwarm, ManualClock, planSwarm, seededIds, swarmMachine, SwarmError, type NodeProfile, type Swarm, type SwarmConfig } from '../../src/index.js';
import { applyEvent, persistSwarm, restoreSwarm, swarmDigest, type LifecycleEvent, type PersistedSwarm } from '../../src/persistence/index.js';
import { caught } from '../runtime/fixtures.js';

/**
 * Warm start (docs/persistence.md): a swarm restored from `persist()` continues exactly where the
 * persisted one was — the same plan, status, liveness, last decision, and the same future ids and
 * decisions for every further lifecycle event.
 */

const profiles: NodeProfile[] = [
  { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 4 },
  { id: 'desktop', memoryGb: 16, score: 5, latencyMs: 6 },
  { id: '__proto__', memoryGb: 12, score: 3, latencyMs: 9 },
  { id: 'constructor', memoryGb: 12, score: 2, latencyMs: 8 },
  { id: 'phone', memoryGb: 4, score: 0.5, latencyMs: 30 },
  { id: 'nœud-é 🚀', memoryGb: 8, score: 1, latencyMs: 12 },
];
const config: SwarmConfig = {
  models: [
    { id: 'base', layers: 12, pipelines: 2, fallback: 'tiny' },
    { id: 'coder', layers: 6, kind: 'expert' },
    { id: 'tiny', layers: 2, kind: 'expert' },
  ],
  ejection: { maxEjectedShare: 0.5 },
};
const pool = [...profiles.map((p) => p.id), 'toString', 'hasOwnProperty', 'valueOf', 'new-a'];

const nodeId = fc.constantFrom(...pool);
const lifecycle: fc.Arbitrary<LifecycleEvent> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ type: fc.constant('node.down' as const), nodeId, cause: fc.constantFrom('manual' as const, 'detector' as const, 'ejected' as const) }) },
  { weight: 4, arbitrary: fc.record({ type: fc.constant('node.alive' as const), nodeId, cause: fc.constantFrom('manual' as const, 'heartbeat' as const, 'probation' as const) }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('node.added' as const), profile: fc.record({ id: nodeId, memoryGb: fc.constantFrom(2, 6, 12, 24), score: fc.constantFrom(1, 4, 9) }) }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('node.removed' as const), nodeId }) },
);

/** What applying an event gave: its result, or the error's class, code and message. */
function outcomeOf(swarm: Swarm, event: LifecycleEvent): unknown {
  try {
    return { ok: applyEvent(swarm, event) };
  } catch (error) {
    const e = error as { name: string; code: string; message: string };
    return { error: [e.name, e.code, e.message] };
  }
}

/** Everything the two swarms must agree on after a step. */
function observed(swarm: Swarm): unknown {
  const state = swarm.state();
  const alive = Object.entries(state.nodes).map(([id, t]) => [id, t.alive]);
  return { digest: swarmDigest(swarm), status: swarm.status(), plan: state.plan, alive, outcome: swarm.actor.getSnapshot().context.outcome, persisted: persistSwarm(swarm) };
}

/** A persisted swarm through JSON, as a key-value store hands it back. */
const roundTrip = (p: PersistedSwarm) => JSON.parse(JSON.stringify(p)) as PersistedSwarm;

describe('persistSwarm(swarm) and restoreSwarm(…)', () => {
  it('continues exactly where the persisted swarm was, for every further event (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(lifecycle, { minLength: 1, maxLength: 40 }), fc.nat(), (events, at) => {
        const k = at % (events.length + 1);
        const a = createSwarm(profiles, config, { seed: 7 });
        for (const e of events.slice(0, k)) outcomeOf(a, e);
        const b = restoreSwarm(profiles, config, roundTrip(persistSwarm(a)));
        expect(observed(b)).toEqual(observed(a));
        for (const e of events.slice(k)) {
          expect(outcomeOf(b, e)).toEqual(outcomeOf(a, e));
          expect(observed(b)).toEqual(observed(a));
        }
        a.stop();
        b.stop();
      }),
      { seed: 1818, numRuns: 150 },
    );
  });

  it('gives equal digests to swarms that applied the same events, and another digest after a change', () => {
    const a = createSwarm(profiles, config, { seed: 3 });
    const b = createSwarm(profiles, config, { seed: 3 });
    expect(swarmDigest(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(swarmDigest(b)).toBe(swarmDigest(a));
    a.report('gpu', { load: 0.9, latencyMs: 50 }); // local telemetry: no part of the digest
    expect(swarmDigest(b)).toBe(swarmDigest(a));
    applyEvent(a, { type: 'node.down', nodeId: 'gpu' });
    expect(swarmDigest(b)).not.toBe(swarmDigest(a));
    b.markDown('gpu');
    expect(swarmDigest(b)).toBe(swarmDigest(a));
    applyEvent(a, { type: 'node.added', profile: { id: 'x', memoryGb: 12 } });
    b.addNode({ id: 'x', memoryGb: 12 });
    expect(swarmDigest(b)).toBe(swarmDigest(a));
    expect(persistSwarm(a).digest).toBe(swarmDigest(a));
  });

  it('restores a detector down that a heartbeat brings back, and an ejection that ends on probation', () => {
    const a = createSwarm(profiles, config, { seed: 1, clock: new ManualClock() });
    applyEvent(a, { type: 'node.down', nodeId: 'desktop', cause: 'detector' });
    applyEvent(a, { type: 'node.down', nodeId: 'phone', cause: 'ejected' });
    const saved = persistSwarm(a);
    expect(saved.members.find((m) => m.profile.id === 'phone')).toEqual({ profile: profiles[4], state: 'ejected', record: { failures: 0, ejections: 1, probation: false } });
    const clock = new ManualClock();
    const b = restoreSwarm(profiles, config, saved, { clock });
    const back: string[] = [];
    b.on('node.alive', (e) => back.push(`${e.nodeId}:${e.cause}`));
    clock.advance(15_000); // the first ban
    b.heartbeat('desktop');
    expect(back).toEqual(['phone:probation', 'desktop:heartbeat']);
    expect(b.actor.getSnapshot().context.members.get('phone')?.ref.getSnapshot().context.health).toMatchObject({ ejections: 1, probation: true });
    expect(b.status()).toBe('healthy');
  });

  it('refuses a snapshot of other profiles or config, or a malformed one, naming the field', () => {
    const a = createSwarm(profiles, config, { seed: 1 });
    a.markDown('gpu');
    const saved = roundTrip(persistSwarm(a));
    const refusal = (restore: unknown, p: readonly NodeProfile[] = profiles, c: SwarmConfig = config, options = {}) => {
      const error = caught(() => restoreSwarm(p, c, restore as PersistedSwarm, options));
      expect(error).toBeInstanceOf(SwarmError);
      expect((error as SwarmError).code).toBe('InvalidInput');
      return (error as SwarmError).message;
    };
    expect(refusal(saved, profiles.slice(1))).toMatch(/field "profiles" must be [0-9a-f]{16}, from the profiles given: they differ/);
    expect(refusal(saved, profiles, { ...config, alpha: 0.5 })).toMatch(/field "config" must be [0-9a-f]{16}, from the config given/);
    expect(refusal(null)).toMatch(/field "snapshot" must be an object, got null; pass what persistSwarm\(\) returned/);
    expect(refusal({ ...saved, version: 2 })).toMatch(/field "version" must be 1/);
    expect(refusal({ ...saved, status: 'healthy' })).toMatch(/field "status" must be degraded, as the members' liveness gives/);
    expect(refusal({ ...saved, members: saved.members.map((m, i) => (i === 1 ? { ...m, state: 'asleep' } : m)) })).toMatch(/field "members\[1\]" must be \{ profile, state/);
    expect(refusal({ ...saved, members: saved.members.map((m, i) => (i === 1 ? { ...m, record: { failures: -1 } } : m)) })).toMatch(/field "members\[1\].record"/);
    expect(refusal({ ...saved, members: saved.members.map((m, i) => (i === 1 ? { ...m, profile: { ...m.profile, memoryGb: -1 } } : m)) })).toMatch(/field "plan" must be valid over the members: node "desktop": "memoryGb" must be/);
    expect(refusal({ ...saved, members: saved.members.slice(1) })).toMatch(/field "plan" must be valid/);
    expect(refusal({ ...saved, ids: -1 })).toMatch(/field "ids" must be null or a 32-bit counter/);
    expect(refusal({ ...saved, ids: 12 })).toMatch(/field "digest" must be [0-9a-f]{16}, the state's: it was altered/);
    expect(refusal({ ...saved, outcome: { kind: 'teleport' } })).toMatch(/field "outcome"/);
    expect(refusal(saved, profiles, config, { seed: 1 })).toMatch(/options "seed" and "idSource" cannot go with a persisted swarm/);
    // The persisted swarm is untouched by all this.
    expect(persistSwarm(a)).toEqual(saved);
  });

  it('applies each wire form as the method it stands for, and the causes as their events', () => {
    const a = createSwarm(profiles, config, { seed: 2 });
    const b = createSwarm(profiles, config, { seed: 2 });
    const causes: string[] = [];
    a.on('*', (e) => {
      if (e.type === 'node.down' || e.type === 'node.alive') causes.push(`${e.type}:${e.cause}`);
    });
    expect(applyEvent(a, { type: 'node.down', nodeId: 'gpu' })).toEqual(b.markDown('gpu'));
    expect(applyEvent(a, { type: 'node.alive', nodeId: 'gpu' })).toEqual(b.markAlive('gpu'));
    expect(applyEvent(a, { type: 'node.added', profile: { id: 'x', memoryGb: 12 } })).toEqual(b.addNode({ id: 'x', memoryGb: 12 }));
    expect(applyEvent(a, { type: 'node.removed', nodeId: 'desktop' })).toEqual(b.removeNode('desktop'));
    applyEvent(a, { type: 'node.down', nodeId: 'phone', cause: 'ejected' });
    applyEvent(a, { type: 'node.alive', nodeId: 'phone', cause: 'probation' });
    applyEvent(a, { type: 'node.down', nodeId: 'phone', cause: 'detector' });
    applyEvent(a, { type: 'node.down', nodeId: 'phone', cause: 'detector' }); // a duplicate: applied once
    expect(causes).toEqual(['node.down:manual', 'node.alive:manual', 'node.down:ejected', 'node.alive:probation', 'node.down:detector']);
    expect((caught(() => applyEvent(a, { type: 'node.down', nodeId: 'ghost' })) as SwarmError).code).toBe('UnknownNode');
    expect((caught(() => applyEvent(a, { type: 'node.added', profile: { id: 'x', memoryGb: 12 } })) as SwarmError).code).toBe('DuplicateNode');
  });

  it('refuses a malformed lifecycle event, naming the field', () => {
    const a = createSwarm(profiles, config, { seed: 1 });
    const before = swarmDigest(a);
    for (const [event, field] of [
      [{ type: 'node.exploded', nodeId: 'gpu' }, '"type"'],
      [{ type: 'node.down', nodeId: 7 }, '"nodeId"'],
      [{ type: 'node.down', nodeId: 'gpu', cause: 'heartbeat' }, '"cause"'],
      [{ type: 'node.alive', nodeId: 'gpu', cause: 'ejected' }, '"cause"'],
      [null, '"type"'],
    ] as const) {
      const error = caught(() => applyEvent(a, event as unknown as LifecycleEvent));
      expect(error).toBeInstanceOf(SwarmError);
      expect((error as SwarmError).message).toContain(field);
    }
    expect(swarmDigest(a)).toBe(before);
  });

  it('persists ids: null for a swarm minting from an idSource, and its copy mints from its own', () => {
    const a = createSwarm(profiles, config, { idSource: seededIds(5) });
    a.markDown('phone');
    const saved = persistSwarm(a);
    expect(saved.ids).toBeNull();
    const b = restoreSwarm(profiles, config, saved, { idSource: seededIds(5) });
    expect(swarmDigest(b)).toBe(swarmDigest(a));
    expect(persistSwarm(b)).toEqual(saved);
  });

  it('refuses to persist a stopped swarm, and gives its digest with the status stopped', () => {
    const a = createSwarm(profiles, config, { seed: 1 });
    const running = swarmDigest(a);
    a.stop();
    expect((caught(() => persistSwarm(a)) as SwarmError).code).toBe('Stopped');
    expect(swarmDigest(a)).not.toBe(running);
  });

  it('tells the node actor of a member that starts down why it is down (the statechart alone)', () => {
    const plan = planSwarm(profiles, config);
    const restore = { down: new Map([['gpu', 'detector' as const], ['phone', 'manual' as const]]), records: new Map(), outcome: undefined };
    const actor = createActor(swarmMachine, { input: { plan, profiles, idSeed: 1, restore } }).start();
    const { context } = actor.getSnapshot();
    expect(actor.getSnapshot().value).toBe('degraded');
    expect(context.members.get('gpu')?.ref.getSnapshot().value).toEqual({ down: 'detected' });
    expect(context.members.get('phone')?.ref.getSnapshot().value).toEqual({ down: 'manual' });
    expect([...context.detected]).toEqual(['gpu']);
    actor.stop();
  });
});
