/** Several models whose wanted copies outnumber what disjoint nodes hold (small copies): plan-packed.ts packs whole copies. */
import { describe, expect, it } from 'vitest';
import { planSwarm } from '../../src/index.js';
import { fullCapacity } from '../../src/core/plan-disjoint.js';
import { sharedThroughput } from '../../src/core/shared-throughput.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../../src/index.js';

function worstFull(plan: SwarmPlan, profiles: readonly NodeProfile[]): number {
  const memory = new Map(profiles.map((p) => [p.id, p.memoryGb] as const));
  const models = new Map(plan.models.map((m) => [m.id, m] as const));
  return Math.max(...plan.pipelines.map((p) => {
    const model = models.get(p.modelId) as ModelSpec;
    const caps = p.stages.map((s) => fullCapacity(memory.get(s.nodeId) ?? 0, model)).sort((a, b) => b - a);
    let held = 0, need = 0;
    while (held < model.layers) held += caps[need++] ?? Number.POSITIVE_INFINITY;
    return p.stages.length / need;
  }));
}
/** plan-disjoint.test.ts's swarmArb, one draw. */
function swarm(count: number, seed: number, models: Omit<ModelSpec, 'id'>[], share: number, extra: Partial<ModelSpec> = {}) {
  let x = seed >>> 0;
  const next = () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0), x / 2 ** 32);
  const nodes: NodeProfile[] = Array.from({ length: count }, (_, i) => ({ id: `n${i}`, memoryGb: Math.round(4 + 20 * next()), score: Math.round((1 + 8 * next()) * 100) / 100 }));
  const total = nodes.reduce((s, n) => s + n.memoryGb, 0);
  const need = models.reduce((s, m) => s + (m.pipelines ?? 1) * m.layers * (m.layerGb ?? 1), 0);
  const scale = Math.max(1, Math.floor((share * total) / need));
  return { nodes, total, models: models.map((m, i): ModelSpec => ({ id: `m${i}`, ...m, ...extra, pipelines: Math.min(1000, (m.pipelines ?? 1) * scale) })) };
}
const DRAW = [585, 737588990, [{ layers: 89, layerGb: 0.25, pipelines: 1 }, { layers: 27, layerGb: 0.25, pipelines: 7 }, { layers: 20, layerGb: 0.5, pipelines: 4 }, { layers: 33, layerGb: 0.125, pipelines: 8 }], 0.46] as const;

describe('planSwarm: memory 2x the wanted copies, more wanted copies than disjoint nodes hold', () => {
  for (const extra of [{}, { stageFactor: 2 }]) {
    it(`keeps every copy within 2x its own full-memory stages ${JSON.stringify(extra)}`, () => {
      const { nodes, models, total } = swarm(DRAW[0], DRAW[1], DRAW[2].map((m) => ({ ...m })), DRAW[3], extra);
      expect(2 * models.reduce((s, m) => s + (m.pipelines ?? 1) * m.layers * (m.layerGb ?? 1), 0)).toBeLessThanOrEqual(total);
      const plan = planSwarm(nodes, { models });
      expect(sharedThroughput(plan, nodes).layerRate).toBeGreaterThanOrEqual(0.9 * sharedThroughput(plan, nodes).bound);
      expect(worstFull(plan, nodes)).toBeLessThanOrEqual(2);
    });
  }
});
