import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createActor, type Snapshot } from 'xstate';
import { nodeKey, provideSwarm, swarmMachine } from '../../machines/swarm.machine.js';
import { createSwarm, ManualClock, planSwarm, seededIds, SwarmError, type NodeProfile, type Swarm, type SwarmConfig } from '../../src/index.js';
import { applyEvent, decodeSnapshot, persistSwarm, restoreSwarm, swarmDigest, type LifecycleEvent, type PersistedSwarm } from '../../src/persistence/index.js';
import { caught } from '../runtime/fixtures.js';
import { LEGACY_CONFIG, LEGACY_PROFILES } from './fixtures/legacy-swarm.js';

/**
 * Warm start (docs/persistence.md): a swarm restored from `persist()` continues exactly where the
 * persisted one was — the same plan, status, liveness, last decision, and the same future ids and
 * decisions for every further lifecycle event.
 */

const profiles: NodeProfile[] = LEGACY_PROFILES;
const config: SwarmConfig = LEGACY_CONFIG;
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
    expect(saved.records).toEqual([['phone', { failures: 0, ejections: 1, probation: false }]]);
    const clock = new ManualClock();
    const b = restoreSwarm(profiles, config, saved, { clock });
    const back: string[] = [];
    b.on('node.alive', (e) => back.push(`${e.nodeId}:${e.cause}`));
    clock.advance(15_000); // the first ban
    b.heartbeat('desktop');
    expect(back).toEqual(['phone:probation', 'desktop:heartbeat']);
    expect(b.node('phone')).toMatchObject({ state: 'alive', ejections: 1, probation: true });
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
    expect(refusal({ ...saved, version: 2 })).toMatch(/field "version" must be 1 of format "hecate-swarm\/snapshot" \(or "hecate-swarm\/swarm", the format before it\), got version 2 of format "hecate-swarm\/snapshot"/);
    expect(refusal({ ...saved, format: 'other' })).toMatch(/got version 1 of format "other": saved by another version/);
    const snap = saved.snapshot as { context: Record<string, unknown> };
    const withContext = (patch: Record<string, unknown>) => ({ ...saved, snapshot: { ...snap, context: { ...snap.context, ...patch } } });
    expect(refusal({ ...saved, snapshot: { ...snap, status: 'done' } })).toMatch(/field "snapshot.status" must be "active"/);
    expect(refusal(withContext({ alive: [1, 1] }))).toMatch(/field "snapshot.context" must be a Swarm's context/);
    expect(refusal(withContext({ alive: { $: 'Uint8Array', bytes: [1, 300] } }))).toMatch(/field snapshot value at snapshot.context.alive.bytes must hold bytes/);
    expect(refusal(withContext({ members: { $: 'Teleport' } }))).toMatch(/unknown tag "\$": "Teleport"/);
    const members = (snap.context['members'] as { entries: [string, { profile: NodeProfile; slot: number }][] }).entries;
    const badMember = members.map(([id, m], i) => [id, i === 1 ? { ...m, profile: { ...m.profile, memoryGb: -1 } } : m]);
    expect(refusal(withContext({ members: { $: 'Map', entries: badMember } }))).toMatch(/field "snapshot.context.plan" must be valid over the members: node "desktop": "memoryGb" must be/);
    expect(refusal(withContext({ members: { $: 'Map', entries: members.map(([id, m]) => [id, { ...m, slot: 99 }]) } }))).toMatch(/field "snapshot.context.members\["gpu"\]" must be \{ profile, slot \}/);
    expect(refusal(withContext({ members: { $: 'Map', entries: members.slice(1) } }))).toMatch(/field "snapshot.context.plan" must be valid/);
    expect(refusal({ ...saved, records: [['ghost', { failures: 0, ejections: 1, probation: false }]] })).toMatch(/field "records\[0\]" must be \[memberId/);
    expect(refusal(withContext({ idState: 12 }))).toMatch(/field "digest" must be [0-9a-f]{16}, the restored state's: the save was altered/);
    expect(refusal({ ...saved, seeded: 'yes' })).toMatch(/field "seeded" must be true or false/);
    expect(refusal(saved, profiles, config, { seed: 1 })).toMatch(/options "seed" and "idSource" cannot go with a persisted swarm/);
    // The persisted swarm is untouched by all this.
    expect(persistSwarm(a)).toEqual(saved);
  });

  it("is XState's own persisted snapshot: it survives JSON and restores through createActor(provideSwarm(…), { snapshot })", () => {
    const a = createSwarm(profiles, config, { seed: 4 });
    a.markDown('gpu');
    a.addNode({ id: 'mini', memoryGb: 12, score: 4 });
    const saved = roundTrip(persistSwarm(a));
    const snapshot = decodeSnapshot(saved.snapshot) as Snapshot<unknown>;
    // The machine alone, with its default implementations (declared telemetry, a scan): the same lifecycle state.
    const actor = createActor(provideSwarm(), { snapshot } as never).start();
    const context = actor.getSnapshot().context;
    const original = a.actor.getSnapshot().context;
    expect(actor.getSnapshot().value).toBe(a.status());
    expect(context.plan).toEqual(original.plan);
    expect([...context.members.keys()]).toEqual([...original.members.keys()]);
    expect(context.alive).toEqual(original.alive);
    expect(context.idState).toBe(original.idState);
    // Its node actors come back from the context, down with the cause the context says.
    expect(actor.system.get(nodeKey('gpu'))).toBeUndefined();
    actor.send({ type: 'node.alive', nodeId: 'gpu' });
    expect(actor.system.get(nodeKey('gpu'))?.getSnapshot().value).toBe('unmonitored');
    expect(actor.getSnapshot().value).toBe('healthy');
    actor.stop();
    // Through restoreSwarm: the same digest, and the same decisions after it.
    const b = restoreSwarm(profiles, config, saved);
    expect(swarmDigest(b)).toBe(swarmDigest(a));
    expect(b.addNode({ id: 'mini2', memoryGb: 12, score: 4 })).toEqual(a.addNode({ id: 'mini2', memoryGb: 12, score: 4 }));
    expect(swarmDigest(b)).toBe(swarmDigest(a));
  });

  it('reads a save of the format before the snapshot (hecate-swarm/swarm version 1) to the digest it was saved with', () => {
    const legacy = JSON.parse(readFileSync(new URL('./fixtures/legacy-swarm-v1.json', import.meta.url), 'utf8')) as PersistedSwarm & { digest: string };
    const b = restoreSwarm(profiles, config, legacy, { clock: new ManualClock() });
    expect(swarmDigest(b)).toBe(legacy.digest);
    expect(b.status()).toBe('degraded');
    expect(b.node('desktop')).toMatchObject({ state: 'down', cause: 'detector' });
    expect(b.node('phone')).toMatchObject({ state: 'down', cause: 'ejected', ejections: 1 });
    expect(b.node('mini')?.state).toBe('alive');
    // Saved again, it is in the snapshot format, and reads back to the same digest.
    const again = persistSwarm(b);
    expect(again.format).toBe('hecate-swarm/snapshot');
    expect(swarmDigest(restoreSwarm(profiles, config, roundTrip(again)))).toBe(legacy.digest);
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

  it('persists seeded: false for a swarm minting from an idSource, and its copy mints from its own', () => {
    const a = createSwarm(profiles, config, { idSource: seededIds(5) });
    a.markDown('phone');
    const saved = persistSwarm(a);
    expect(saved.seeded).toBe(false);
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
    const nodeState = (id: string) => actor.system.get(nodeKey(id))?.getSnapshot().value;
    expect(actor.getSnapshot().value).toBe('degraded');
    expect(nodeState('gpu')).toEqual({ down: 'detected' });
    expect(nodeState('phone')).toEqual({ down: 'manual' });
    expect([...context.detected]).toEqual(['gpu']);
    actor.stop();
  });
});
