/**
 * Multi-model swarms for the counted-once bench (docs/cost.md "Counted once"): seeded swarms of
 * heterogeneous nodes — memory and speed drawn independently — serving a base model and experts.
 */
import { uniform } from '../src/core/random.js';
import type { ModelSpec, NodeProfile } from '../src/index.js';

/** A multi-model swarm of the bench. */
export interface MultiModelSwarm {
  readonly name: string;
  readonly nodes: NodeProfile[];
  readonly models: ModelSpec[];
}

/** `count` nodes, memory uniform in [m0, m1] GB (whole GB), score uniform in [s0, s1] (0.01). */
export function heterogeneousNodes(count: number, seed: number, [m0, m1]: readonly [number, number], [s0, s1]: readonly [number, number]): NodeProfile[] {
  const random = uniform(seed);
  const nodes: NodeProfile[] = [];
  for (let i = 0; i < count; i++) {
    const memoryGb = Math.round(m0 + (m1 - m0) * random());
    const score = Math.round((s0 + (s1 - s0) * random()) * 100) / 100;
    nodes.push({ id: `n${i}`, memoryGb, score });
  }
  return nodes;
}

/** Four models of 80 layers, four copies each (the 1,000-node planning bench's models). */
export const FOUR_MODELS: readonly ModelSpec[] = [
  { id: 'base', layers: 80, layerGb: 0.5, pipelines: 4 },
  { id: 'code', layers: 80, layerGb: 0.5, pipelines: 4 },
  { id: 'vision', layers: 80, layerGb: 0.25, pipelines: 4 },
  { id: 'small', layers: 80, layerGb: 0.125, pipelines: 4 },
];

/** A base model of 64 layers and two experts of 32. */
export const BASE_AND_EXPERTS: readonly ModelSpec[] = [
  { id: 'base', layers: 64, layerGb: 0.5, pipelines: 4 },
  { id: 'code', layers: 32, layerGb: 0.5, pipelines: 2 },
  { id: 'math', layers: 32, layerGb: 0.5, pipelines: 2 },
];

/**
 * Four small models whose wanted copies (520) outnumber what disjoint nodes hold on 585 nodes of
 * 4–24 GB, while needing less than half their memory: whole copies are packed (docs/cost.md).
 */
export const SMALL_COPIES: readonly ModelSpec[] = [
  { id: 'base', layers: 89, layerGb: 0.25, pipelines: 26 },
  { id: 'code', layers: 27, layerGb: 0.25, pipelines: 182 },
  { id: 'vision', layers: 20, layerGb: 0.5, pipelines: 104 },
  { id: 'small', layers: 33, layerGb: 0.125, pipelines: 208 },
];

/** Four models of 24 layers × 0.125 GB, 400 copies each: 1,600 wanted copies on 1,000 nodes (the packed path's timing). */
export const MANY_SMALL_COPIES: readonly ModelSpec[] = ['base', 'code', 'vision', 'small'].map((id) => ({ id, layers: 24, layerGb: 0.125, pipelines: 400 }));

/**
 * The multi-model swarms of the bench: 1,000 nodes of 6–16 GB and speed 1–9 with four models;
 * 300 nodes of 4–24 GB with a base model and two experts; the same 300 nodes with as many
 * wanted copies as half their memory holds (memory exactly twice what the wanted copies need);
 * and 585 nodes of 4–24 GB with more small wanted copies than disjoint nodes hold.
 */
export function multiModelSwarms(): MultiModelSwarm[] {
  const tight = heterogeneousNodes(300, 7, [4, 24], [1, 9]);
  const total = tight.reduce((s, n) => s + n.memoryGb, 0);
  // Half the memory in wanted copies: base 32 GB a copy, experts 16 GB; two base copies per expert copy each.
  const unit = 2 * 32 + 16 + 16;
  const k = Math.floor(total / 2 / unit);
  return [
    { name: '1000 nodes 6-16 GB, 4 models', nodes: heterogeneousNodes(1000, 1, [6, 16], [1, 9]), models: FOUR_MODELS.map((m) => ({ ...m })) },
    { name: '300 nodes 4-24 GB, base + 2 experts', nodes: heterogeneousNodes(300, 2, [4, 24], [1, 9]), models: BASE_AND_EXPERTS.map((m) => ({ ...m })) },
    {
      name: '300 nodes 4-24 GB, memory 2x the wanted copies',
      nodes: tight,
      models: BASE_AND_EXPERTS.map((m) => ({ ...m, pipelines: m.id === 'base' ? 2 * k : k })),
    },
    { name: '585 nodes 4-24 GB, 520 small wanted copies (packed)', nodes: heterogeneousNodes(585, 25, [4, 24], [1, 9]), models: SMALL_COPIES.map((m) => ({ ...m })) },
  ];
}
