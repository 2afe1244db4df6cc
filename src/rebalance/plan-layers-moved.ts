/**
 * Layers moved between two plans (docs/rebalance.md "Measured"): for every node and model, the
 * layers the node holds in the second plan that it did not hold in the first. What a re-plan from
 * scratch would load, against what the rebalancer's moves load.
 */
import type { SwarmPlan } from '../core/types.js';

/** Layers each (node, model) holds in `after` and not in `before`, summed. */
export function planLayersMoved(before: SwarmPlan, after: SwarmPlan): number {
  const held = new Map<string, Uint8Array>();
  const layers = new Map(before.models.map((m) => [m.id, m.layers] as const));
  for (const m of after.models) if (!layers.has(m.id)) layers.set(m.id, m.layers);
  for (const p of before.pipelines) {
    for (const s of p.stages) {
      const key = `${s.nodeId}\u0000${p.modelId}`;
      let bits = held.get(key);
      if (bits === undefined) held.set(key, (bits = new Uint8Array(layers.get(p.modelId) ?? s.layerEnd)));
      bits.fill(1, s.layerStart, s.layerEnd);
    }
  }
  let moved = 0;
  for (const p of after.pipelines) {
    for (const s of p.stages) {
      const bits = held.get(`${s.nodeId}\u0000${p.modelId}`);
      for (let l = s.layerStart; l < s.layerEnd; l++) if (bits?.[l] !== 1) moved++;
    }
  }
  return moved;
}
