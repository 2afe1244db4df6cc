/**
 * The rule for a node serving several models (docs/cost.md "When a node serves several
 * models"): with compute counted once, a slice of a second model on a busy node adds no compute,
 * only memory — and a hop on every token of its copy. So a copy may put a stage on a node that
 * holds another model's slice only when the plan's counted-once throughput, layer-weighted
 * (Σ over models of throughput × layers), rises by more than a hop's worth (`HOP_SHARE` of the
 * copy's own layer-weighted rate) for each such stage.
 */
import { HOP_SHARE } from './plan-short.js';
import { sharedThroughput } from './shared-throughput.js';
import type { ModelSpec, NodeProfile, Pipeline } from './types.js';

/**
 * Whether replacing `before` by `after` — which differ in the copy `after[at]` (new, or re-split)
 * — is worth its shared stages: true when the copy shares no node with another model's copy, else
 * when the counted-once layer-weighted throughput gains more than `HOP_SHARE` × the copy's
 * layer-weighted rate per shared stage.
 */
export function worthSharing(models: readonly ModelSpec[], profiles: readonly NodeProfile[], before: readonly Pipeline[], after: readonly Pipeline[], at: number): boolean {
  const copy = after[at];
  if (copy === undefined || models.length < 2) return true;
  const others = new Set<string>();
  for (const p of after) if (p.modelId !== copy.modelId) for (const s of p.stages) others.add(s.nodeId);
  const shared = copy.stages.filter((s) => others.has(s.nodeId)).length;
  if (shared === 0) return true;
  const layers = models.find((m) => m.id === copy.modelId)?.layers ?? 0;
  const was = sharedThroughput({ models, pipelines: before }, profiles).layerRate;
  const now = sharedThroughput({ models, pipelines: after }, profiles);
  return now.layerRate - was > HOP_SHARE * shared * layers * (now.copies.get(copy.id) ?? 0);
}
