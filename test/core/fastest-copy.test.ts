/**
 * Cold routes pick the fastest copy (docs/cost.md): with declared profiles only, the
 * copy routeRequest chooses has the lowest per-token time among intact copies — Σ over stages of
 * 100 · (layers / model layers) / score, plus the hop cost: each stage's declared latency, one
 * unmeasured load's worth per copy (120) and 15 per hop — worked out here from the profiles alone.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSwarm, planSwarm, routeRequest, SwarmState } from '../../src/index.js';
import type { ModelSpec, NodeProfile, Pipeline, RoutingRequest, Stage, SwarmPlan } from '../../src/index.js';
import { loadTopologies } from '../../bench/planners/throughput.js';
import { SEEDED } from './fixtures.js';

/** The per-token time of a copy from its nodes' declared profiles, independently of the cost code. */
function perTokenTime(stages: readonly Stage[], layers: number, profiles: ReadonlyMap<string, NodeProfile>): number {
  let t = 120 + 15 * (stages.length - 1);
  for (const s of stages) {
    const p = profiles.get(s.nodeId);
    t += (100 * ((s.layerEnd - s.layerStart) / layers)) / Math.max(p?.score ?? 1, 0.01) + (p?.latencyMs ?? 100);
  }
  return t;
}

/** The chosen copy's per-token time and the lowest among intact copies, per model. */
function choices(plan: SwarmPlan, profiles: readonly NodeProfile[], request: RoutingRequest = {}) {
  const byId = new Map(profiles.map((p) => [p.id, p] as const));
  const state = SwarmState.fromProfiles(plan, profiles);
  return plan.models.map((m) => {
    const copies = plan.pipelines.filter((p) => p.modelId === m.id);
    const route = routeRequest(m.id, request, state);
    const chosen = perTokenTime(route.stages, m.layers, byId);
    const best = Math.min(...copies.map((p) => perTokenTime(p.stages, m.layers, byId)));
    return { model: m.id, pipelineId: route.pipelineId, chosen, best, copies: copies.length };
  });
}

const example = JSON.parse(readFileSync('examples/swarm.json', 'utf8')) as { models: ModelSpec[]; nodes: NodeProfile[] };
const committed: { name: string; models: readonly ModelSpec[]; nodes: readonly NodeProfile[] }[] = [
  ...loadTopologies().map((t) => ({ name: t.name, models: t.models, nodes: t.nodes })),
  { name: 'examples/swarm.json', models: example.models, nodes: example.nodes },
  { name: 'examples/swarm.json --pipelines 2', models: example.models.map((m) => ({ ...m, pipelines: 2 })), nodes: example.nodes },
];

describe('cold routes pick the fastest copy', () => {
  it.each(committed.map((t) => [t.name, t] as const))('on %s: the chosen copy has the lowest per-token time, by the pure scan and the runtime', (_, t) => {
    const plan = planSwarm(t.nodes, { models: t.models });
    const swarm = createSwarm(t.nodes, { models: t.models });
    try {
      for (const c of choices(plan, t.nodes)) {
        expect(c.chosen, `${c.model}: ${c.pipelineId}`).toBeLessThanOrEqual(c.best + 1e-9);
        expect(swarm.route({ model: c.model }).pipelineId).toBe(c.pipelineId);
      }
    } finally {
      swarm.stop();
    }
  });

  const nodeArb = fc.record({ score: fc.constantFrom(0.5, 1, 1.5, 3, 6, 16), latencyMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }) });

  /** Random plans: 2-4 disjoint copies of one model, each of 1-4 stages with a random split, on nodes with random declared profiles. */
  const worldArb: fc.Arbitrary<[NodeProfile[], SwarmPlan]> = fc.integer({ min: 4, max: 40 }).chain((layers) =>
    fc
      .array(fc.record({ nodes: fc.array(nodeArb, { minLength: 1, maxLength: 4 }), cuts: fc.uniqueArray(fc.integer({ min: 1, max: layers - 1 }), { minLength: 3, maxLength: 3 }) }), { minLength: 2, maxLength: 4 })
      .map((copies): [NodeProfile[], SwarmPlan] => {
        const profiles: NodeProfile[] = [];
        const pipelines: Pipeline[] = copies.map((c, i) => {
          const cuts = c.cuts.slice(0, c.nodes.length - 1).sort((a, b) => a - b);
          const bounds = [0, ...cuts, layers];
          const stages: Stage[] = [];
          for (let k = 0; k + 1 < bounds.length; k++) {
            const node = c.nodes[k] as { score: number; latencyMs: number | undefined };
            const id = `c${i}-${k}`;
            profiles.push({ id, memoryGb: 64, score: node.score, ...(node.latencyMs === undefined ? {} : { latencyMs: node.latencyMs }) });
            stages.push({ nodeId: id, layerStart: bounds[k] as number, layerEnd: bounds[k + 1] as number });
          }
          return { id: `m/${i}`, modelId: 'm', stages };
        });
        return [profiles, { models: [{ id: 'm', layers, pipelines: copies.length }], pipelines }];
      }),
  );

  it('on random plans, the chosen copy has the lowest per-token time', () => {
    let originalWorse = 0;
    fc.assert(
      fc.property(worldArb, ([profiles, plan]) => {
        const [c] = choices(plan, profiles);
        expect(c?.chosen).toBeLessThanOrEqual((c?.best ?? 0) + 1e-9);
        const [o] = choices(plan, profiles, { costModel: 'original' });
        if ((o?.chosen ?? 0) > (o?.best ?? 0) + 1e-9) originalWorse++;
      }),
      SEEDED,
    );
    // The same check fails for the original cost model: it would catch a regression to it.
    expect(originalWorse).toBeGreaterThan(SEEDED.numRuns / 10);
  });
});
