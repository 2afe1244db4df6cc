/**
 * Each copy's per-token time as the router counts it (docs/cost.md): the compute part — the
 * capability terms, `100 · (layers / model layers) / score` per stage — plus the hop cost — each
 * stage's latency and load terms and `15` per hop. Their sum is the copy's route cost without the
 * tokens term, so the copy with the lowest per-token time is the one `routeRequest` picks.
 */
import { chainCost, nodeCost, resolveRequest, stageShare, telemetryOf, type ExtraLoad } from './cost.js';
import { checkExtraLoad } from './failover.js';
import { isIntact, planIndex } from './plan-index.js';
import { checkStateLike, requireModel } from './route.js';
import type { RoutingRequest, SwarmStateLike } from './types.js';

/** One copy's per-token time, split into compute and hops (plain data). */
export interface CopyTime {
  readonly pipelineId: string;
  readonly modelId: string;
  readonly stages: number;
  /** Σ over stages of `w_k · 100 · share / score`: the time of the layers themselves. */
  readonly computeMs: number;
  /** Everything else the cost charges per copy: each stage's latency and load terms, and `w_h · 15` per hop. */
  readonly hopMs: number;
  /** `computeMs + hopMs`: the copy's route cost without the tokens term. */
  readonly perTokenMs: number;
  /** Every node of the copy alive: only intact copies are routed to. */
  readonly intact: boolean;
}

/**
 * The per-token time of every copy of `modelId` under the current telemetry, in pipeline-id
 * order. `request` picks weights, penalties and the cost model as for `routeRequest`.
 * @throws {RoutingError} `UnknownModel`, or `InvalidRequest` for a bad request, state or in-flight load;
 *   {@link PlanError} `InvalidPlan` for a plan with a gap or an overlap.
 * @example copyTimes(SwarmState.fromProfiles(plan, profiles), 'base').map((c) => c.perTokenMs)
 */
export function copyTimes(state: SwarmStateLike, modelId: string, request: RoutingRequest = {}, extra?: ExtraLoad): CopyTime[] {
  const r = resolveRequest(request);
  checkExtraLoad(extra);
  checkStateLike(state, 'copyTimes');
  const model = requireModel(modelId, state);
  const computeWeights = { latency: 0, load: 0, capability: r.weights.capability, hops: 0, tokens: 0 };
  return (planIndex(state.plan).pipelinesByModel.get(modelId) ?? []).map((p) => {
    const perTokenMs = chainCost(p.stages, state.nodes, r, extra, model.layers);
    let computeMs = 0;
    for (const s of p.stages) computeMs += nodeCost(telemetryOf(state.nodes, s.nodeId), computeWeights, r.penalties, 0, stageShare(s, model.layers, r.costModel));
    return { pipelineId: p.id, modelId, stages: p.stages.length, computeMs, hopMs: perTokenMs - computeMs, perTokenMs, intact: isIntact(p, state.nodes) };
  });
}
