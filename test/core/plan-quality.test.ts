import { describe, expect, it } from 'vitest';
import { planSwarm, validatePlan } from '../../src/index.js';
import type { ModelSpec, NodeProfile } from '../../src/index.js';
import { BOUND_SHARE, EXO_GEOMEAN, measureTopology } from '../../bench/plan-quality.js';
import { planExo } from '../../bench/planners/exo.js';
import { planPetals } from '../../bench/planners/petals.js';
import { capacityOf, computeBound, loadTopologies, memoryAllowsBound } from '../../bench/planners/throughput.js';

const topologies = loadTopologies();
const measured = topologies.map(measureTopology);

/** Best Σ 1/T over every partition into copies, by brute force (small topologies only). */
function bruteForceBest(nodes: readonly NodeProfile[], model: ModelSpec): number {
  const copies = model.pipelines ?? 1;
  const all = nodes.map((n) => ({ score: n.score ?? 1, cap: Math.min(capacityOf(n, model), model.layers) })).filter((n) => n.cap > 0);
  const copyTime = (group: typeof all): number => {
    const counts = group.map(() => 0);
    let worst = 0;
    for (let l = 0; l < model.layers; l++) {
      let best = -1;
      for (let i = 0; i < group.length; i++) {
        const g = group[i] as (typeof all)[number];
        if ((counts[i] ?? 0) >= g.cap) continue;
        if (best === -1 || ((counts[i] ?? 0) + 1) / g.score < ((counts[best] ?? 0) + 1) / (group[best] as (typeof all)[number]).score) best = i;
      }
      if (best === -1) return Infinity;
      counts[best] = (counts[best] ?? 0) + 1;
      worst = Math.max(worst, (counts[best] ?? 0) / (group[best] as (typeof all)[number]).score);
    }
    return worst;
  };
  let best = 0;
  const assign = new Array<number>(all.length).fill(0);
  const visit = (i: number): void => {
    if (i === all.length) {
      let sum = 0;
      for (let c = 0; c < copies; c++) {
        const time = copyTime(all.filter((_, j) => assign[j] === c));
        if (time === Infinity) return; // a copy that cannot hold the model: not a plan
        sum += 1 / time;
      }
      best = Math.max(best, sum);
      return;
    }
    for (let c = 0; c < (i === 0 ? 1 : copies); c++) {
      assign[i] = c;
      visit(i + 1);
    }
  };
  visit(0);
  return best;
}

describe('planSwarm plan quality (bench/topologies)', () => {
  it('has committed topologies, single-model, named -memory-bound exactly when memory caps the bound', () => {
    expect(topologies.length).toBeGreaterThanOrEqual(6);
    for (const t of topologies) {
      expect(t.models).toHaveLength(1);
      expect(t.name.endsWith('-memory-bound'), t.name).toBe(!memoryAllowsBound(t.nodes, t.models[0] as ModelSpec));
    }
  });

  it.each(measured.map((q) => [q.topology, q] as const))('beats the exo-style and Petals-style planners on %s', (_, q) => {
    expect(q.ours).toBeGreaterThanOrEqual(q.exo * (1 - 1e-9));
    expect(q.ours).toBeGreaterThanOrEqual(q.petals * (1 - 1e-9));
  });

  it.each(measured.filter((q) => q.memoryAllows).map((q) => [q.topology, q] as const))(`reaches ${BOUND_SHARE * 100}% of the compute bound on %s`, (_, q) => {
    expect(q.ours).toBeGreaterThanOrEqual(BOUND_SHARE * q.bound);
  });

  it('counts a layer with its KV reserve in the yardsticks (capacity, compute bound)', () => {
    const node: NodeProfile = { id: 'a', memoryGb: 10, score: 3 };
    expect(capacityOf(node, { id: 'm', layers: 32, layerGb: 1 })).toBe(10);
    expect(capacityOf(node, { id: 'm', layers: 32, layerGb: 1, kvReserveGb: 0.25 })).toBe(8);
    // A node without room for one layer and its reserve adds nothing to the bound.
    expect(computeBound([node, { id: 'b', memoryGb: 1, score: 5 }], { id: 'm', layers: 4, kvReserveGb: 0.5 })).toBe(3 / 4);
  });

  it(`is at least ${EXO_GEOMEAN}x the exo-style planner in geometric mean`, () => {
    const geo = Math.exp(measured.reduce((s, q) => s + Math.log(q.ours / q.exo), 0) / measured.length);
    expect(geo).toBeGreaterThanOrEqual(EXO_GEOMEAN);
  });

  it('finds the best partition where brute force can check it (memory and speed disagreeing)', () => {
    const small = topologies.filter((t) => Math.pow(t.models[0]?.pipelines ?? 1, t.nodes.length) <= 4096);
    expect(small.map((t) => t.name)).toContain('gpu-rack-memory-bound');
    for (const t of small) {
      const q = measured.find((m) => m.topology === t.name);
      // Within 5%: short copies give up a little throughput for fewer hops (docs/cost.md).
      expect(q?.ours, t.name).toBeGreaterThanOrEqual(0.95 * bruteForceBest(t.nodes, t.models[0] as ModelSpec));
    }
  });

  it('gives valid, deterministic plans, and the reference planners give disjoint in-memory copies', () => {
    for (const t of topologies) {
      const model = t.models[0] as ModelSpec;
      const plan = planSwarm(t.nodes, { models: t.models });
      expect(validatePlan(plan, t.nodes), t.name).toEqual([]);
      expect(planSwarm(t.nodes, { models: t.models })).toEqual(plan);
      for (const pipelines of [planExo(t.nodes, model), planPetals(t.nodes, model)]) {
        expect(pipelines).toHaveLength(model.pipelines ?? 1);
        expect(validatePlan({ models: t.models, pipelines }, t.nodes), t.name).toEqual([]);
      }
    }
  });
});
