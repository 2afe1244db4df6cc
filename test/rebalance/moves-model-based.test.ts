/**
 * The statechart's move transitions (machines/swarm-moves.ts, docs/rebalance.md
 * "Make-before-break"), covered by model-based paths from `@xstate/graph` and played against the
 * real runtime: a rebalance begins, its nodes load (not routed for the new copy until loaded), the
 * copy forms (routable before the old copy stops), the old copy drains; a break-first move drains
 * first; a loading node lost, or a load that failed, aborts its move. Status and plan must agree after every step.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, planSwarm, type NodeProfile, type SwarmConfig } from '../../src/index.js';
import type { MoveOrder, SwarmEvent } from '../../machines/swarm.machine.js';
import { pathName, runSwarmPath, swarmTestModel, type SwarmPath } from '../../src/testing/index.js';

const profiles: NodeProfile[] = [
  { id: 'a', memoryGb: 24, score: 4 },
  { id: 'b', memoryGb: 24, score: 2 },
  { id: 'c', memoryGb: 8, score: 1 },
];
const config: SwarmConfig = { models: [{ id: 'm', layers: 16 }] };
const plan = planSwarm(profiles, config);
const copy = plan.pipelines[0];
if (copy === undefined) throw new Error('no copy');
const nodes = copy.stages.map((s) => s.nodeId);
// Make-before-break: the copy re-split one layer over (every node of it loads what it lacks).
const cut = (copy.stages[0]?.layerEnd ?? 1) - 1;
const resplit: MoveOrder = {
  id: 'mbb',
  modelId: 'm',
  removes: [copy],
  adds: [{ id: 'm/next', modelId: 'm', stages: [{ nodeId: nodes[0] as string, layerStart: 0, layerEnd: cut }, { nodeId: (nodes[1] ?? 'c') as string, layerStart: cut, layerEnd: 16 }] }],
  loading: [(nodes[1] ?? 'c') as string],
  breakFirst: false,
};
// Break-first: the copy moves whole to the node that holds none of it.
const spare = profiles.map((p) => p.id).find((id) => !nodes.includes(id) && (profiles.find((p) => p.id === id)?.memoryGb ?? 0) >= 16) ?? 'b';
const moveAway: MoveOrder = { id: 'bf', modelId: 'm', removes: [copy], adds: [{ id: 'm/away', modelId: 'm', stages: [{ nodeId: spare, layerStart: 0, layerEnd: 16 }] }], loading: [spare], breakFirst: true };

const model = swarmTestModel(profiles, config, { removals: true, rebalances: [[resplit], [moveAway]] });
const paths = model.getShortestPaths();
const events = (p: SwarmPath) => p.steps.map((s) => s.event as SwarmEvent | { type: 'xstate.init' });
const withMoves = paths.filter((p) => events(p).some((e) => e.type === 'rebalance.begin'));

describe('the statechart of a rebalance (model-based)', () => {
  it('has paths through every move transition', () => {
    const kinds = new Set<string>();
    for (const p of withMoves) {
      p.steps.forEach((s, i) => {
        const e = s.event as SwarmEvent;
        const prev = p.steps[i - 1]?.state;
        const m = 'moveId' in e ? prev?.context.moves?.get(e.moveId) : undefined;
        if (e.type === 'rebalance.begin') kinds.add(`begin ${e.moves[0]?.breakFirst === true ? 'break-first' : 'make-before-break'}`);
        if (e.type === 'span.loaded') kinds.add(`loaded ${m?.order.breakFirst === true ? 'break-first' : 'make-before-break'}`);
        if (e.type === 'copy.drained') kinds.add(`drained ${m?.order.breakFirst === true ? 'break-first' : 'make-before-break'}`);
        if (e.type === 'span.failed' && !s.state.context.moves?.has(e.moveId)) kinds.add(`aborted by span.failed ${m?.order.breakFirst === true ? 'break-first' : 'make-before-break'}`);
        if ((e.type === 'node.down' || e.type === 'node.removed') && prev?.context.moves !== undefined && s.state.context.moves?.size !== prev.context.moves.size) kinds.add(`aborted by ${e.type}`);
      });
    }
    expect([...kinds].sort()).toEqual(['aborted by node.down', 'aborted by node.removed', 'aborted by span.failed break-first', 'aborted by span.failed make-before-break', 'begin break-first', 'begin make-before-break', 'drained break-first', 'drained make-before-break', 'loaded break-first', 'loaded make-before-break']);
  });

  it('never has a loading move’s new copy in the plan, and a make-before-break copy replaces the old one in one step', () => {
    for (const p of withMoves) {
      for (const s of p.steps) {
        const ids = new Set(s.state.context.plan.pipelines.map((q) => q.id));
        for (const m of s.state.context.moves?.values() ?? []) if (m.phase === 'loading') for (const q of m.order.adds) expect(ids.has(q.id)).toBe(false);
        // The step a make-before-break move forms: its new copies in, its old ones out, in one transition.
        const e = s.event as SwarmEvent;
        const formed = e.type === 'span.loaded' ? s.state.context.moves?.get(e.moveId) : undefined;
        if (formed !== undefined && formed.phase === 'draining') {
          for (const q of formed.order.adds) expect(ids.has(q.id)).toBe(true);
          for (const q of formed.order.removes) expect(ids.has(q.id)).toBe(false);
        }
        // Copies of one model never share a node.
        const seen = new Set<string>();
        for (const q of s.state.context.plan.pipelines) for (const st of q.stages) {
          expect(seen.has(`${q.modelId}/${st.nodeId}/${q.id}`)).toBe(false);
          seen.add(`${q.modelId}/${st.nodeId}/${q.id}`);
        }
      }
    }
  });

  it(`plays every path with a move against the runtime (${withMoves.length} paths): same status and plan after every step`, () => {
    expect(withMoves.length).toBeGreaterThan(10);
    for (const p of withMoves) {
      const swarm = createSwarm(profiles, config, { seed: 1 });
      runSwarmPath(p, swarm);
      const last = p.steps[p.steps.length - 1]?.state;
      if (swarm.status() !== 'stopped') expect(swarm.state().plan.pipelines.map((q) => q.id), pathName(p)).toEqual(last?.context.plan.pipelines.map((q) => q.id));
      swarm.stop();
    }
  });
});
