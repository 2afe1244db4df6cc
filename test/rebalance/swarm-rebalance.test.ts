/**
 * `swarm.rebalance()` on a running swarm (docs/rebalance.md "Make-before-break"): the plug-in's
 * moves carried out through the statechart, a new copy routed only once its spans are loaded, an
 * old copy draining its requests in flight, the automatic policy on an injected clock.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, planSwarm, SwarmError, validatePlan, type ModelSpec, type NodeProfile, type Swarm, type SwarmEmitted } from '../../src/index.js';
import { churnedSwarm as churn } from '../../bench/churn.js';
import { sharedThroughput } from '../../src/core/shared-throughput.js';
import { ManualClock } from '../../src/testing/index.js';
import { rebalancer, type RebalancerOptions } from '../../src/rebalance/index.js';

const ONE: readonly ModelSpec[] = [{ id: 'base', layers: 32 }];

/** A churned swarm (bench/churn.ts) with the rebalancer plugged in, on a manual clock. */
function churnedSwarm(seed: number, options: RebalancerOptions = {}, n = 24, events = 40, models: readonly ModelSpec[] = ONE): { swarm: Swarm; clock: ManualClock; profiles: () => NodeProfile[] } {
  const clock = new ManualClock(0);
  const c = churn(seed, models, n, events, { clock, rebalancer: rebalancer(options) });
  return { swarm: c.swarm, clock, profiles: () => [...c.profiles] };
}

const rate = (swarm: Swarm, profiles: readonly NodeProfile[]) => sharedThroughput(swarm.state().plan, profiles).layerRate;

describe('swarm.rebalance', () => {
  it('carries the moves out make-before-break: a new copy is routed once loaded, the old one drains, then a second rebalance moves nothing', () => {
    const { swarm, clock, profiles } = churnedSwarm(2);
    const seen: SwarmEmitted['type'][] = [];
    swarm.on('*', (e) => void seen.push(e.type));
    const before = rate(swarm, profiles());
    const planBefore = swarm.state().plan;
    const r = swarm.rebalance();
    expect(r.moves.length).toBeGreaterThan(0);
    expect(r.before).toBeCloseTo(before, 9);
    const added = new Set(r.moves.flatMap((m) => m.adds.map((p) => p.id)));
    // Loading: no new copy is in the plan, so none is routed.
    const mbb = r.moves.filter((m) => m.dropsFirst.length === 0);
    for (let i = 0; i < 20; i++) expect(added.has(swarm.route().pipelineId)).toBe(false);
    for (const m of mbb) for (const id of m.removes) expect(swarm.state().plan.pipelines.some((p) => p.id === id)).toBe(true);
    // A request in flight on an old copy of a make-before-break move.
    const old = mbb[0]?.removes[0];
    const oldNodes = planBefore.pipelines.find((p) => p.id === old)?.stages.map((s) => s.nodeId) ?? [];
    const leased = old === undefined ? undefined : swarm.route({}, { reserve: true });
    expect(swarm.rebalance().underWay.length).toBeGreaterThan(0); // under way: decides nothing
    clock.advance(Math.ceil(Math.max(...r.moves.map((m) => m.loadSeconds))) * 1000 + 1);
    // Every span loaded: the new copies are in the plan and the old ones out of it.
    const plan = swarm.state().plan;
    for (const id of added) expect(plan.pipelines.some((p) => p.id === id)).toBe(true);
    for (const m of r.moves) for (const id of m.removes) expect(plan.pipelines.some((p) => p.id === id)).toBe(false);
    expect(validatePlan(plan, profiles())).toEqual([]);
    expect(rate(swarm, profiles())).toBeCloseTo(r.after, 6);
    expect(seen).toContain('copy.formed');
    if (leased !== undefined && leased.lease.nodes.some((n) => oldNodes.includes(n))) {
      // The old copy drains: its move is not done while the request is in flight.
      expect(swarm.actor.getSnapshot().context.moves?.size ?? 0).toBeGreaterThan(0);
      swarm.release(leased.lease, { latencyMs: 10 });
    } else if (leased !== undefined) swarm.release(leased.lease, { latencyMs: 10 });
    clock.advance(120_000);
    expect(swarm.actor.getSnapshot().context.moves).toBeUndefined();
    expect(seen.filter((t) => t === 'move.done').length).toBe(r.moves.length);
    const fresh = sharedThroughput(planSwarm(profiles(), { models: ONE.map((m) => ({ ...m })) }), profiles()).layerRate;
    expect(rate(swarm, profiles())).toBeGreaterThanOrEqual(0.9 * fresh);
    expect(swarm.rebalance().moves).toEqual([]);
    swarm.stop();
  });

  it('aborts a move whose loading node goes down; the old copy keeps serving; the rescue still comes before the mark', () => {
    const { swarm } = churnedSwarm(5);
    const r = swarm.rebalance();
    const m = r.moves.find((x) => x.dropsFirst.length === 0 && x.loads.some((l) => !x.removes.some((id) => swarm.state().plan.pipelines.find((p) => p.id === id)?.stages.some((s) => s.nodeId === l.nodeId))));
    if (m === undefined) return void swarm.stop();
    const aborted: string[] = [];
    swarm.on('move.aborted', (e) => void aborted.push(e.moveId));
    const victim = m.loads[0]?.nodeId as string;
    const rescue = swarm.markDown(victim);
    expect(rescue.nodeId).toBe(victim);
    expect(aborted).toContain(m.id);
    for (const id of m.removes) expect(swarm.state().plan.pipelines.some((p) => p.id === id)).toBe(true);
    expect(swarm.actor.getSnapshot().context.moves?.has(m.id) ?? false).toBe(false);
    swarm.stop();
  });

  it('runs on an interval with everyMs, reaching a fixed point', () => {
    const { swarm, clock, profiles } = churnedSwarm(7, { everyMs: 60_000 });
    const before = rate(swarm, profiles());
    const begun: number[] = [];
    swarm.on('moves.begun', () => void begun.push(clock.now()));
    for (let i = 0; i < 12; i++) clock.advance(60_000);
    expect(begun.length).toBeGreaterThan(0);
    expect(rate(swarm, profiles())).toBeGreaterThan(before);
    const settled = begun.length;
    for (let i = 0; i < 5; i++) clock.advance(60_000);
    expect(begun.length).toBe(settled);
    swarm.stop();
  });

  it('rebalances a swarm of three models to 0.9 of a fresh plan, every plan on the way valid', () => {
    const models: ModelSpec[] = [{ id: 'base', layers: 32, pipelines: 2 }, { id: 'code', layers: 16 }, { id: 'math', layers: 16 }];
    const { swarm, clock, profiles } = churnedSwarm(11, {}, 40, 60, models);
    const invalid: string[] = [];
    for (const type of ['moves.begun', 'copy.formed'] as const) swarm.on(type, (e) => void invalid.push(...validatePlan(e.plan, profiles()).map((i) => i.message)));
    const r = swarm.rebalance();
    clock.advance(600_000);
    expect(invalid).toEqual([]);
    expect(swarm.actor.getSnapshot().context.moves).toBeUndefined();
    const fresh = sharedThroughput(planSwarm(profiles(), { models }), profiles()).layerRate;
    expect(r.after).toBeGreaterThanOrEqual(0.9 * fresh);
    expect(rate(swarm, profiles())).toBeCloseTo(r.after, 6);
    swarm.stop();
  });

  it('refuses without the plug-in, with a bad option, and once stopped', () => {
    const plain = createSwarm([{ id: 'a', memoryGb: 32, score: 2 }], { models: ONE.map((m) => ({ ...m })) });
    expect(() => plain.rebalance()).toThrow(/no rebalancer/);
    expect(() => createSwarm([{ id: 'a', memoryGb: 32 }], { models: ONE.map((m) => ({ ...m })) }, { rebalancer: {} as never })).toThrow(/rebalancer/);
    expect(() => rebalancer({ everyMs: 0 })).toThrow(SwarmError);
    expect(() => rebalancer({ minGain: 2 })).toThrow(/minGain/);
    const { swarm } = churnedSwarm(3);
    expect(() => swarm.rebalance({ horizonSeconds: -1 })).toThrow(/horizonSeconds/);
    swarm.stop();
    expect(() => swarm.rebalance()).toThrow(/stopped/);
  });
});
