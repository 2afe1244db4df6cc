/**
 * What a move costs (docs/rebalance.md "Cost model"): the spans each node must load — the layers
 * of its new stages it does not hold already — their load time (span bytes ÷ the node's load
 * bandwidth; the nodes of a move load at once, so the move takes its slowest node's time), and the
 * throughput lost while they load: none when every loading node has memory for its new spans
 * beside what it serves (make-before-break), else the replaced copies through a node that must
 * drop its old span first, for the load time.
 */
import type { ModelSpec, NodeProfile, Pipeline, Stage } from '../core/types.js';
import type { PlannedLoad } from '../runtime/rebalance-hook.js';

/** One span a node loads for a move (the root's `PlannedLoad`). */
export type SpanLoad = PlannedLoad;

/** The layer ranges of `stage` that `held` (the node's ranges of the same model before) does not cover. */
export function missingRanges(stage: Stage, held: readonly Stage[]): { layerStart: number; layerEnd: number }[] {
  const cuts = held.filter((h) => h.layerEnd > stage.layerStart && h.layerStart < stage.layerEnd).sort((a, b) => a.layerStart - b.layerStart);
  const out: { layerStart: number; layerEnd: number }[] = [];
  let at = stage.layerStart;
  for (const h of cuts) {
    if (h.layerStart > at) out.push({ layerStart: at, layerEnd: h.layerStart });
    at = Math.max(at, h.layerEnd);
  }
  if (at < stage.layerEnd) out.push({ layerStart: at, layerEnd: stage.layerEnd });
  return out;
}

/** A node's load bandwidth: declared on its profile, else the default. */
export function bandwidthOf(profile: NodeProfile | undefined, fallback: number): number {
  const declared = profile?.loadGbPerSecond;
  return declared !== undefined && declared > 0 ? declared : fallback;
}

/**
 * The spans the new copies `adds` make their nodes load, given what each node held of the model
 * in the copies `removes` replaces (a layer kept in place loads nothing).
 */
export function spanLoads(model: ModelSpec, removes: readonly Pipeline[], adds: readonly Pipeline[], profiles: ReadonlyMap<string, NodeProfile>, fallbackGbPerSecond: number): SpanLoad[] {
  const held = new Map<string, Stage[]>();
  for (const p of removes) for (const s of p.stages) (held.get(s.nodeId) ?? held.set(s.nodeId, []).get(s.nodeId))?.push(s);
  const layerGb = model.layerGb ?? 1;
  const loads: SpanLoad[] = [];
  for (const p of adds) {
    for (const s of p.stages) {
      const bw = bandwidthOf(profiles.get(s.nodeId), fallbackGbPerSecond);
      for (const r of missingRanges(s, held.get(s.nodeId) ?? [])) {
        const gb = (r.layerEnd - r.layerStart) * layerGb;
        loads.push({ nodeId: s.nodeId, modelId: model.id, pipelineId: p.id, layerStart: r.layerStart, layerEnd: r.layerEnd, gb, seconds: gb / bw });
      }
    }
  }
  return loads;
}

/** The move's load time: its nodes load at once, each its spans one after another. */
export function loadSeconds(loads: readonly SpanLoad[]): number {
  const per = new Map<string, number>();
  for (const l of loads) per.set(l.nodeId, (per.get(l.nodeId) ?? 0) + l.seconds);
  let worst = 0;
  for (const s of per.values()) worst = Math.max(worst, s);
  return worst;
}
