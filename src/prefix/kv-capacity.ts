/**
 * How many prompt tokens each copy can keep cached (docs/prefix-cache.md, "Capacity"). A copy's
 * KV cache for a token lives on every stage, each stage holding its layers' share, so a copy
 * holds as many tokens as its tightest stage.
 *
 * A node's KV memory is what its weights leave: `memoryGb − Σ layers × layerGb` over every stage
 * it holds, in every copy of every model. Each stage gets the reserve the plan made for it
 * (`layers × kvReserveGb`) and a share of the rest in proportion to its weights, so copies of
 * several models on one node split it. A stage of `layers` of a model of `L` layers stores
 * `kvGbPerToken × layers / L` GB per token (`ModelSpec.kvGbPerToken`, default
 * {@link DEFAULT_KV_GB_PER_TOKEN}).
 */
import { DEFAULT_KV_GB_PER_TOKEN } from './prefix-cache-options.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../core/types.js';

/** Each pipeline's KV capacity in tokens, by pipeline id (0 when a node of it is unknown). */
export function kvCapacities(plan: SwarmPlan, memoryOf: (nodeId: string) => number | undefined): Map<string, number> {
  const models = new Map<string, ModelSpec>(plan.models.map((m) => [m.id, m]));
  // Per node: its weights and its reserves, over every stage it holds.
  const weights = new Map<string, number>();
  const reserves = new Map<string, number>();
  for (const p of plan.pipelines) {
    const m = models.get(p.modelId);
    for (const s of p.stages) {
      const layers = s.layerEnd - s.layerStart;
      weights.set(s.nodeId, (weights.get(s.nodeId) ?? 0) + layers * (m?.layerGb ?? 1));
      reserves.set(s.nodeId, (reserves.get(s.nodeId) ?? 0) + layers * (m?.kvReserveGb ?? 0));
    }
  }
  const out = new Map<string, number>();
  for (const p of plan.pipelines) {
    const m = models.get(p.modelId);
    const modelLayers = m?.layers ?? 1;
    const perToken = m?.kvGbPerToken ?? DEFAULT_KV_GB_PER_TOKEN;
    let tokens = Infinity;
    for (const s of p.stages) {
      const memory = memoryOf(s.nodeId);
      const w = weights.get(s.nodeId) ?? 0;
      const layers = s.layerEnd - s.layerStart;
      if (memory === undefined || layers <= 0) {
        tokens = 0;
        break;
      }
      const reserve = layers * (m?.kvReserveGb ?? 0);
      const surplus = Math.max(memory - w - (reserves.get(s.nodeId) ?? 0), 0);
      const own = layers * (m?.layerGb ?? 1);
      const kvGb = reserve + (w > 0 ? (surplus * own) / w : 0);
      tokens = Math.min(tokens, (kvGb * modelLayers) / (perToken * layers));
    }
    out.set(p.id, Number.isFinite(tokens) ? Math.floor(tokens) : 0);
  }
  return out;
}

/** The memory of each profile, by id: what {@link kvCapacities} reads. */
export function memoryReader(profiles: Iterable<NodeProfile>): (nodeId: string) => number | undefined {
  const byId = new Map<string, number>();
  for (const p of profiles) byId.set(p.id, p.memoryGb);
  return (id) => byId.get(id);
}
