/**
 * How the rebalancer's runner loads (docs/rebalance.md "Replicas, serve and agents"): a loader that
 * fails aborts its move and the old copy serves on; a loader's measured time prices that node's
 * later loads; a swarm restored from a save taken while a move was pending carries it on.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, type NodeProfile, type SwarmConfig, type SwarmEmitted, type SwarmPlan, type NodeStates } from '../../src/index.js';
import { persistSwarm, restoreSwarm } from '../../src/persistence/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { MoveRunner, rebalancer, type RunnerPolicy, type SpanOrder } from '../../src/rebalance/index.js';
import { proposeMoves } from '../../src/rebalance/propose-moves.js';
import { churnedSwarm as churn } from '../../bench/churn.js';
import { sharedThroughput } from '../../src/core/shared-throughput.js';

// docs/rebalance.md's swarm: a spare node joins; one regroup (break-first) puts it in the copy.
const NODES: NodeProfile[] = [
  { id: 'fast', memoryGb: 8, score: 8 },
  { id: 'slow', memoryGb: 32, score: 1 },
];
const CONF: SwarmConfig = { models: [{ id: 'base', layers: 32 }] };
const NEW: NodeProfile = { id: 'new', memoryGb: 20, score: 8 };
const copies = (plan: SwarmPlan) => plan.pipelines.map((p) => p.stages.map((s) => s.nodeId).join('+'));
const flush = () => new Promise((r) => setTimeout(r, 0));

describe('the runner’s loads', () => {
  it('aborts a move whose loader fails, naming the node and why: a make-before-break move’s old copy serves on; the swarm decides again', async () => {
    const clock = new ManualClock(0);
    let fail = true;
    const { swarm } = churn(2, [{ id: 'base', layers: 32 }], 24, 40, { clock, rebalancer: rebalancer({ load: async () => { if (fail) throw new Error('disk gone'); } }) });
    const seen: SwarmEmitted[] = [];
    swarm.on('*', (e) => void seen.push(e));
    const r = swarm.rebalance();
    const mbb = r.moves.filter((m) => m.dropsFirst.length === 0);
    expect(mbb.length).toBeGreaterThan(0);
    await flush();
    const reasons = new Map(seen.flatMap((e) => (e.type === 'move.aborted' ? [[e.moveId, e.reason] as const] : [])));
    expect([...reasons.keys()].sort()).toEqual(r.moves.map((m) => m.id).sort());
    for (const why of reasons.values()) expect(why).toMatch(/^node "[^"]+" could not load its span: disk gone$/);
    expect(swarm.actor.getSnapshot().context.moves).toBeUndefined();
    const ids = new Set(swarm.state().plan.pipelines.map((p) => p.id));
    for (const m of mbb) for (const id of m.removes) expect(ids.has(id)).toBe(true); // never out of the plan
    for (const m of r.moves) for (const p of m.adds) expect(ids.has(p.id)).toBe(false);
    fail = false;
    expect(swarm.rebalance().underWay).toEqual([]); // nothing left pending: it decides again
    swarm.stop();
  });

  it('prices a node’s later loads at the bandwidth its loader measured', async () => {
    const clock = new ManualClock(0);
    const seen: NodeProfile[][] = [];
    const policy: RunnerPolicy = {
      decide: (plan: SwarmPlan, profiles: readonly NodeProfile[], states: NodeStates) => {
        seen.push([...profiles]);
        return proposeMoves(plan, profiles, states);
      },
      load: async (span: SpanOrder) => ({ seconds: span.gb / 0.25 }), // read at 0.25 GB/s
      loadGbPerSecond: 1,
    };
    const swarm = createSwarm(NODES, CONF, { clock, rebalancer: { kind: 'rebalancer', attach: (host) => new MoveRunner(host, policy) } });
    swarm.addNode(NEW);
    const r = swarm.rebalance();
    expect(r.moves).toHaveLength(1);
    await flush();
    await flush();
    expect(copies(swarm.state().plan)).toEqual(['new+fast+slow']);
    swarm.rebalance();
    const later = new Map(seen[1]?.map((p) => [p.id, p.loadGbPerSecond]));
    expect(later.get('new')).toBeCloseTo(0.25, 9);
    expect(later.get('fast')).toBeCloseTo(0.25, 9);
    expect(later.get('slow')).toBeUndefined(); // loaded nothing: nothing measured
    expect(seen[0]?.every((p) => p.loadGbPerSecond === undefined)).toBe(true);
    swarm.stop();
  });

  it('keeps out of a move a copy it would re-form as it is: a break-first regroup no longer stops it, so the model keeps a copy while the move loads', () => {
    // The reference-engine run's swarm: a move that regrouped both copies, dropping first, left the model no copy while it loaded.
    const g = 0.000172544;
    const clock = new ManualClock(0);
    const nodes: NodeProfile[] = [{ id: 'slow', memoryGb: g * 6 * 1.01, score: 0.25 }, { id: 'a', memoryGb: g * 2 * 1.01, score: 4 }, { id: 'other', memoryGb: g * 6 * 1.01, score: 1 }];
    const swarm = createSwarm(nodes, { models: [{ id: 'tiny', layers: 6, layerGb: g, pipelines: 2, kvGbPerToken: 0.000001536 }] }, { clock, rebalancer: rebalancer() });
    swarm.addNode({ id: 'fast', memoryGb: g * 4 * 1.01, score: 4 });
    const r = swarm.rebalance();
    expect(r.moves.map((m) => [m.removes, m.adds.map((p) => p.stages.map((s) => s.nodeId).join('+'))])).toEqual([[['tiny/0'], ['fast+a', 'other']]]);
    expect(r.moves[0]?.dropsFirst).toEqual(['a']);
    expect(copies(swarm.state().plan)).toEqual(['slow']); // while it loads, the slow copy serves
    clock.advance(60_000);
    expect(copies(swarm.state().plan)).toEqual(['slow', 'fast+a', 'other']);
    expect(sharedThroughput(swarm.state().plan, [...nodes, { id: 'fast', memoryGb: g * 4 * 1.01, score: 4 }]).layerRate).toBeCloseTo(r.after, 9);
    swarm.stop();
  });

  it('carries on a move pending in a save: the restored swarm loads its spans and forms the copy', () => {
    const clock = new ManualClock(0);
    const swarm = createSwarm(NODES, CONF, { clock, rebalancer: rebalancer() });
    swarm.addNode(NEW);
    const r = swarm.rebalance();
    expect(r.moves).toHaveLength(1);
    const saved = JSON.parse(JSON.stringify(persistSwarm(swarm))) as ReturnType<typeof persistSwarm>;
    swarm.stop();
    const clock2 = new ManualClock(0);
    const restored = restoreSwarm(NODES, CONF, saved, { clock: clock2, rebalancer: rebalancer() });
    expect([...(restored.actor.getSnapshot().context.moves?.keys() ?? [])]).toEqual([r.moves[0]?.id]);
    clock2.advance(Math.ceil((r.moves[0]?.loadSeconds ?? 0) * 1000) + 1);
    expect(restored.actor.getSnapshot().context.moves).toBeUndefined();
    expect(copies(restored.state().plan)).toEqual(['new+fast+slow']);
    restored.stop();
  });
});
