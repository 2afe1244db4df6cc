/**
 * Re-forming copies of one model on a set of nodes (docs/rebalance.md "Moves"): the planner's own
 * short copies (src/core/plan-short.ts) over the nodes, each copy water-filled by capability, so a
 * regrouped set of copies looks like what planSwarm would build from those nodes.
 */
import { byCapability, type Candidate } from '../core/plan-search.js';
import { shortCopies } from '../core/plan-short.js';
import { splitLayers } from '../core/split-layers.js';
import type { ModelSpec, Stage } from '../core/types.js';

/** The slowest stage's time of a copy (layers ÷ score); Infinity through a node of unknown speed. */
export function stageTime(stages: readonly Stage[], score: (nodeId: string) => number): number {
  let worst = 0;
  for (const s of stages) worst = Math.max(worst, (s.layerEnd - s.layerStart) / score(s.nodeId));
  return worst;
}

/** A copy's rate on nodes of its own: 1 / its slowest stage. */
export function copyRate(stages: readonly Stage[], score: (nodeId: string) => number): number {
  const t = stageTime(stages, score);
  return t > 0 && Number.isFinite(t) ? 1 / t : 0;
}

/**
 * The copies the planner would build of `model` from `candidates` (each with the layers it can
 * hold): short copies, fastest first, each water-filled. Nodes no copy takes are left out.
 */
export function regroupCopies(candidates: readonly Candidate[], model: ModelSpec): Stage[][] {
  const usable = candidates.filter((c) => c.cap > 0);
  if (usable.reduce((s, c) => s + Math.min(c.cap, model.layers), 0) < model.layers) return [];
  return shortCopies(usable, model.layers, Number.POSITIVE_INFINITY, model.stageFactor).map((g) => splitLayers([...g].sort(byCapability), model.layers));
}

/** One copy's layers water-filled again over its own nodes (each with the layers it can hold). */
export function resplitCopy(candidates: readonly Candidate[], model: ModelSpec): Stage[] | undefined {
  if (candidates.reduce((s, c) => s + Math.min(c.cap, model.layers), 0) < model.layers) return undefined;
  return splitLayers([...candidates].sort(byCapability), model.layers);
}
