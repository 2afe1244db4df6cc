import { fixedCost, nodeCost, resolveRequest, sumNodeCosts, type ResolvedRequest } from './cost.js';
import { RoutingError } from './errors.js';
import { deadNodesOf, isIntact, planIndex } from './plan-index.js';
import type { ModelSpec, NodeStates, Pipeline, Route, RoutingRequest, Stage, SwarmStateLike } from './types.js';

/** The model `modelId` of the plan, or a `RoutingError` `UnknownModel`. */
export function requireModel(modelId: string, state: SwarmStateLike): ModelSpec {
  const model = planIndex(state.plan).models.get(modelId);
  if (model === undefined) {
    const known = state.plan.models.map((m) => `"${m.id}"`).join(', ');
    throw new RoutingError('UnknownModel', `unknown model "${modelId}": this swarm serves ${known}`);
  }
  return model;
}

/** Builds a route over `stages` with its cost from the formula of SPEC §4. */
export function makeRoute(
  modelId: string,
  pipelineId: string,
  stages: readonly Stage[],
  nodes: NodeStates,
  r: ResolvedRequest,
  degraded = false,
): Route {
  const cost = sumNodeCosts(stages, (id) => nodeCost(nodes[id], r.weights, r.penalties)) + fixedCost(stages.length, r.tokens, r.weights);
  return { modelId, pipelineId, stages: stages.map((s) => ({ ...s })), cost, hops: Math.max(stages.length - 1, 0), degraded };
}

/**
 * The cheapest intact pipeline of `modelId` among `pipelines` (sorted by id), skipping any that
 * uses `alsoDead` or `excludeId`. Ties go to the smaller pipeline id because the list is sorted.
 */
export function cheapestIntact(
  pipelines: readonly Pipeline[],
  nodes: NodeStates,
  r: ResolvedRequest,
  alsoDead?: string,
  excludeId?: string,
): { pipeline: Pipeline; cost: number } | undefined {
  let best: { pipeline: Pipeline; cost: number } | undefined;
  for (const p of pipelines) {
    if (p.id === excludeId || !isIntact(p, nodes, alsoDead)) continue;
    const cost = sumNodeCosts(p.stages, (id) => nodeCost(nodes[id], r.weights, r.penalties)) + fixedCost(p.stages.length, r.tokens, r.weights);
    if (best === undefined || cost < best.cost) best = { pipeline: p, cost };
  }
  return best;
}

/**
 * Routes one request for `modelId` (SPEC §4): exact model match, pipelines with any node down
 * dropped, lowest cost wins, ties broken by pipeline id.
 *
 * @throws {RoutingError} `UnknownModel`, `NoHealthyPipeline`, or `InvalidRequest` for a bad number.
 * @example
 * const route = routeRequest('base', { tokens: 512 }, SwarmState.fromPlan(plan));
 */
export function routeRequest(modelId: string, request: RoutingRequest, state: SwarmStateLike): Route {
  const r = resolveRequest(request);
  requireModel(modelId, state);
  const pipelines = planIndex(state.plan).pipelinesByModel.get(modelId) ?? [];
  const best = cheapestIntact(pipelines, state.nodes, r);
  if (best === undefined) throw noHealthyPipeline(modelId, pipelines, state.nodes);
  return makeRoute(modelId, best.pipeline.id, best.pipeline.stages, state.nodes, r);
}

/** The error for a model with no intact copy, naming each copy and its dead nodes. */
export function noHealthyPipeline(modelId: string, pipelines: readonly Pipeline[], nodes: NodeStates): RoutingError {
  if (pipelines.length === 0) return new RoutingError('NoHealthyPipeline', `no live copy of model "${modelId}": the plan has no pipeline for it`);
  const why = pipelines.map((p) => `${p.id} (${deadNodesOf(p, nodes).join(', ')} down)`).join(', ');
  return new RoutingError('NoHealthyPipeline', `no live copy of model "${modelId}": pipelines ${why}`);
}
