/**
 * How long a reserved request is expected to take, for the stall rule (docs/detection.md): the
 * latency estimates of its nodes plus the work it asks of each — its tokens through the layers
 * the node runs, at the node's speed. A large request is expected to take longer, so a node
 * serving one is not taken for a black hole.
 */
import { DEFAULT_PENALTIES } from '../core/cost.js';
import type { NodeTelemetry, Route, Stage, SwarmPlan } from '../core/types.js';

/**
 * Milliseconds one token takes through a whole model on a score-1 node: the cost model's compute
 * term (docs/cost.md, "Per-token time"), read as milliseconds.
 */
export const MODEL_TOKEN_MS = 100;

/**
 * The expected time of a request of `tokens` tokens on `stages` of a model of `modelLayers`
 * layers: Σ over its stages of the node's latency estimate (unmeasured: the default penalty) plus
 * `tokens × MODEL_TOKEN_MS × layers ÷ modelLayers ÷ score` (unmeasured score: 1). With no tokens
 * it is the latency estimates alone.
 * @example expectedRequestMs([{ nodeId: 'a', layerStart: 0, layerEnd: 6 }], () => ({ alive: true, latencyMs: 20, score: 2 }), 12, 10) // 20 + 10 × 100 × 0.5 ÷ 2 = 270
 */
export function expectedRequestMs(stages: readonly Stage[], telemetry: (nodeId: string) => NodeTelemetry | undefined, modelLayers: number, tokens: number): number {
  let ms = 0;
  for (const s of stages) {
    const t = telemetry(s.nodeId);
    ms += t?.latencyMs ?? DEFAULT_PENALTIES.latencyMs;
    if (tokens > 0) ms += (tokens * MODEL_TOKEN_MS * (s.layerEnd - s.layerStart)) / Math.max(modelLayers, 1) / Math.max(t?.score ?? DEFAULT_PENALTIES.score, 0.01);
  }
  return ms;
}

/** The layers of `route`'s model in `plan` (its last stage's end if the plan has no such model). */
export function modelLayersOf(plan: SwarmPlan, route: Pick<Route, 'modelId' | 'stages'>): number {
  const model = plan.models.find((m) => m.id === route.modelId);
  return model?.layers ?? Math.max(1, ...route.stages.map((s) => s.layerEnd));
}
