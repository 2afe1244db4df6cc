import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import { aliveMembers, computeRescue, swarmMachine, type SwarmEvent, type SwarmInput } from '../../machines/swarm.machine.js';
import { planSwarm, SwarmState, validatePlan, type NodeProfile, type SwarmConfig } from '../../src/index.js';

/**
 * The Swarm statechart alone, driven with XState's pure functions only — `initialTransition` then
 * `transition` — from an input built with public functions, no `Swarm` class: every decision the
 * runtime reports (rescue, growth, retirement, status) is in the snapshot after the event.
 */

type Snap = SnapshotFrom<typeof swarmMachine>;

const four: NodeProfile[] = ['n1', 'n2', 'n3', 'n4'].map((id) => ({ id, memoryGb: 8, score: 1, latencyMs: 5 }));
// base/0 = n1[0,6) n2[6,12); base/1 = n3[0,6) n4[6,12); tiny/0 = n1[0,2) (no further copies)
const withReserve: SwarmConfig = {
  models: [
    { id: 'base', layers: 12, pipelines: 2, fallback: 'tiny' },
    { id: 'tiny', layers: 2, kind: 'expert' },
  ],
  furtherCopies: false,
};

function input(profiles: readonly NodeProfile[], config: SwarmConfig, extra: Partial<SwarmInput> = {}): SwarmInput {
  const plan = planSwarm(profiles, config);
  return { plan, profiles, idSeed: 7, ...extra };
}

/** Runs events through the pure machine and returns every snapshot after the initial one. */
function run(start: SwarmInput, events: readonly SwarmEvent[]): Snap[] {
  let [snapshot] = initialTransition(swarmMachine, start);
  return events.map((event) => ([snapshot] = transition(swarmMachine, snapshot, event)) && snapshot);
}

const down = (nodeId: string): SwarmEvent => ({ type: 'node.down', nodeId });
const nodesOf = (route: { stages: readonly { nodeId: string }[] }) => route.stages.map((s) => s.nodeId);

function rescueOf(s: Snap) {
  const o = s.context.outcome;
  if (o?.kind !== 'rescue') throw new Error(`expected a rescue, got ${String(o?.kind)}`);
  return o;
}

describe('swarmMachine, driven with pure transition()', () => {
  it('starts healthy, and from a state with a node down starts degraded', () => {
    const [healthy] = initialTransition(swarmMachine, input(four, withReserve));
    expect(healthy.value).toBe('healthy');
    const plan = planSwarm(four, withReserve);
    const [degraded] = initialTransition(swarmMachine, { plan, profiles: four, down: ['n2'] });
    expect(degraded.value).toBe('degraded');
    expect(aliveMembers(degraded.context).get('n2')).toBe(false);
  });

  it('holds the rescue computed before the mark: copy → splice → degraded → Unrecoverable', () => {
    const [copy, splice, degraded, last] = run(input(four, withReserve), [down('n2'), down('n3'), down('n4'), down('n1')]) as [Snap, Snap, Snap, Snap];
    const c = rescueOf(copy).recoveries.find((r) => r.modelId === 'base');
    expect(c?.strategy).toBe('copy');
    expect(c?.from.pipelineId).toBe('base/0'); // the route that used n2: taken before the mark
    expect(nodesOf(c!.from)).toContain('n2');
    expect(c?.route.pipelineId).toBe('base/1');
    expect(copy.value).toBe('degraded');

    const s = rescueOf(splice).recoveries.find((r) => r.modelId === 'base');
    expect(s?.strategy).toBe('splice');
    expect(s?.replaced).toEqual([{ layerStart: 0, layerEnd: 6, from: 'n3', to: 'n1' }]);
    expect(nodesOf(s!.route)).toEqual(['n1', 'n4']);

    const d = rescueOf(degraded).recoveries.find((r) => r.modelId === 'base');
    expect(d?.strategy).toBe('degraded');
    expect(d?.route.modelId).toBe('tiny');
    expect(d?.missingLayers).toEqual([{ layerStart: 6, layerEnd: 12 }]);
    expect(degraded.value).toBe('degraded');

    expect(rescueOf(last).unrecoverable).toContain('base');
    expect(last.value).toBe('failed');
  });

  it('reads liveness from its own context: computeRescue after the mark finds nothing left to rescue', () => {
    const [start] = initialTransition(swarmMachine, input(four, withReserve));
    const [marked] = transition(swarmMachine, start, down('n1'));
    // The same node, rescued from the context before and after its own mark.
    const reads = { telemetry: SwarmState.fromProfiles(start.context.plan, four).nodes, inflight: {} };
    const before = computeRescue(start.context, 'n1', reads);
    expect(before.recoveries.map((r) => r.strategy)).toEqual(['copy']); // base from its other copy
    expect(before.unrecoverable).toEqual(['tiny']); // tiny's one copy is n1 alone
    const after = computeRescue(marked.context, 'n1', reads);
    expect(after.recoveries).toEqual([]);
    expect(after.unrecoverable).toEqual([]);
  });

  it('does nothing for a node already down or a stranger: the same snapshot comes back', () => {
    const [start] = initialTransition(swarmMachine, input(four, withReserve));
    const [once] = transition(swarmMachine, start, down('n1'));
    expect(transition(swarmMachine, once, down('n1'))[0]).toBe(once);
    expect(transition(swarmMachine, once, down('toaster'))[0]).toBe(once);
    expect(transition(swarmMachine, once, { type: 'node.added', profile: { id: 'n3', memoryGb: 4 } })[0]).toBe(once);
    expect(transition(swarmMachine, once, { type: 'node.added', profile: { id: 'x', memoryGb: Number.NaN } })[0]).toBe(once);
  });

  it('after node.added holds the growth decision and adopts its plan, from its own liveness', () => {
    const newcomer = { id: 'n5', memoryGb: 8, score: 1 };
    const [, grown] = run(input(four, withReserve), [down('n2'), { type: 'node.added', profile: newcomer }]) as [Snap, Snap];
    const o = grown.context.outcome;
    expect(o?.kind).toBe('growth');
    if (o?.kind !== 'growth') return;
    expect(o.role).toBe('restore'); // n2 is down in the machine's own context: base/0 is restored
    expect(o.replaced).toEqual(['base/0']);
    expect(grown.context.plan).toBe(o.plan);
    expect(grown.context.plan.pipelines.map((p) => p.id)).toContain(o.pipelines[0]);
    expect(validatePlan(grown.context.plan, [...four, newcomer])).toEqual([]);
    expect(grown.value).toBe('healthy');
  });

  it('mints the same pipeline ids from the same snapshot (ids come from its context)', () => {
    const [start] = initialTransition(swarmMachine, input(four, withReserve));
    const big = { type: 'node.added', profile: { id: 'big', memoryGb: 16, score: 4 } } as const;
    const [a] = transition(swarmMachine, start, big);
    const [b] = transition(swarmMachine, start, big);
    expect(a.context.outcome).toEqual(b.context.outcome);
    const [c] = transition(swarmMachine, a, { type: 'node.added', profile: { id: 'big2', memoryGb: 16, score: 4 } });
    const ids = (s: Snap) => (s.context.outcome?.kind === 'growth' ? s.context.outcome.pipelines : []);
    expect(ids(c)).not.toEqual(ids(a)); // the id state moved on
  });

  it('after node.removed holds the retirement and adopts its plan; the slot is reused by the next newcomer', () => {
    const [gone, back] = run(input(four, withReserve), [
      { type: 'node.removed', nodeId: 'n4' },
      { type: 'node.added', profile: { id: 'n6', memoryGb: 1 } },
    ]) as [Snap, Snap];
    const o = gone.context.outcome;
    expect(o?.kind).toBe('retirement');
    if (o?.kind !== 'retirement') return;
    expect(o.dropped).toEqual(['base/1']);
    expect(gone.context.plan.pipelines.map((p) => p.id)).not.toContain('base/1');
    expect(gone.context.members.has('n4')).toBe(false);
    expect(gone.value).toBe('healthy');
    const slot = (s: Snap, id: string) => s.context.members.get(id)?.slot;
    expect(slot(back, 'n6')).toBe(3); // n4's slot
    expect(back.context.alive.length).toBe(4);
  });

  it('refuses a plan change that would not validate, changing nothing but the outcome', () => {
    // The profiles claim less memory than the plan already uses: no plan over them validates.
    const plan = planSwarm(four, withReserve);
    const shrunk = four.map((p) => ({ ...p, memoryGb: 1 }));
    const [start] = initialTransition(swarmMachine, { plan, profiles: shrunk });
    const [after] = transition(swarmMachine, start, { type: 'node.added', profile: { id: 'n5', memoryGb: 8 } });
    expect(after.context.outcome).toMatchObject({ kind: 'refused', event: 'node.added', nodeId: 'n5' });
    expect(after.context.outcome?.kind === 'refused' && after.context.outcome.reason).toMatch(/would not validate/);
    expect(after.context.members.has('n5')).toBe(false);
    expect(after.context.plan).toBe(start.context.plan);
    const [gone] = transition(swarmMachine, start, { type: 'node.removed', nodeId: 'n4' });
    expect(gone.context.outcome?.kind).toBe('refused');
    expect(gone.context.members.has('n4')).toBe(true);
  });

  it('ends in stopped', () => {
    const [stopped] = run(input(four, withReserve), [{ type: 'swarm.stop' }]) as [Snap];
    expect(stopped.value).toBe('stopped');
    expect(stopped.status).toBe('done');
  });
});
