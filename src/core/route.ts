import { chainCost, resolveRequest, tokensCost, type ExtraLoad, type ResolvedRequest } from './cost.js';
import { describeValue, isRecordLike } from './describe.js';
import { ownValue } from './records.js';
import { RoutingError } from './errors.js';
import { assertPlanShapeOnce, deadNodesOf, isIntact, planIndex } from './plan-index.js';
import type { ModelSpec, NodeStates, Pipeline, Route, RoutingRequest, Stage, SwarmPlan, SwarmStateLike } from './types.js';

/** The model `modelId` of the plan, or a `RoutingError` `UnknownModel`. */
export function requireModel(modelId: string, state: SwarmStateLike): ModelSpec {
  const model = typeof modelId === 'string' ? planIndex(state.plan).models.get(modelId) : undefined;
  if (model === undefined) {
    const known = state.plan.models.map((m) => `"${m.id}"`).join(', ');
    throw new RoutingError('UnknownModel', `unknown model ${describeValue(modelId)}: this swarm serves ${known}`);
  }
  return model;
}

/**
 * Checks what a caller handed in as a state: an object `{ plan, nodes }` whose plan has a valid
 * shape (checked once per plan object) and whose `nodes` is an object of telemetry by node id.
 * @throws {RoutingError} `InvalidRequest`; {@link PlanError} `InvalidPlan` for a plan with a gap or an overlap.
 */
export function checkStateLike(state: unknown, where: string): asserts state is SwarmStateLike {
  if (!isRecordLike(state) || !isRecordLike(state.nodes) || !isRecordLike(state.plan)) {
    throw new RoutingError('InvalidRequest', `${where} needs a state { plan, nodes } (a SwarmState), got ${describeValue(state)}`);
  }
  assertPlanShapeOnce(state.plan as unknown as SwarmPlan);
}

/**
 * Builds a route over `stages` with its cost (docs/cost.md). `modelLayers` is the layer count of
 * the model the stages belong to; a degraded route, which misses layers, must pass it.
 */
export function makeRoute(
  modelId: string,
  pipelineId: string,
  stages: readonly Stage[],
  nodes: NodeStates,
  r: ResolvedRequest,
  degraded = false,
  extra?: ExtraLoad,
  modelLayers?: number,
): Route {
  const cost = chainCost(stages, nodes, r, extra, modelLayers) + tokensCost(r.tokens, r.weights);
  return { modelId, pipelineId, stages: stages.map((s) => ({ ...s })), cost, hops: Math.max(stages.length - 1, 0), degraded };
}

/**
 * The cheapest intact pipeline among `pipelines` (sorted by id), skipping any that uses
 * `alsoDead`; `cost` is its chain cost (without the tokens term, equal for all). A pipeline with
 * a suspect node is taken only when every intact one has one (docs/detection.md). Ties go to the
 * smaller pipeline id because the list is sorted and only a strictly lower cost replaces.
 */
export function cheapestIntact(
  pipelines: readonly Pipeline[],
  nodes: NodeStates,
  r: ResolvedRequest,
  alsoDead?: string,
  extra?: ExtraLoad,
  modelLayers?: number,
): { pipeline: Pipeline; cost: number } | undefined {
  let best: { pipeline: Pipeline; cost: number } | undefined;
  let bestSuspect = false;
  for (const p of pipelines) {
    if (!isIntact(p, nodes, alsoDead)) continue;
    const suspect = hasSuspect(p, nodes);
    if (best !== undefined && suspect && !bestSuspect) continue;
    const cost = chainCost(p.stages, nodes, r, extra, modelLayers);
    if (best === undefined || cost < best.cost || (bestSuspect && !suspect)) {
      best = { pipeline: p, cost };
      bestSuspect = suspect;
    }
  }
  return best;
}

/** Whether a node of the pipeline is suspect (its detector's phi past the suspect level). */
function hasSuspect(pipeline: Pipeline, nodes: NodeStates): boolean {
  for (const s of pipeline.stages) if (ownValue(nodes, s.nodeId)?.suspect === true) return true;
  return false;
}

/**
 * Routes one request for `modelId` (docs/design.md §4): exact model match, pipelines with any node down
 * dropped, lowest cost wins (docs/cost.md: layer-aware unless `request.costModel` is
 * `'original'`), ties broken by pipeline id.
 *
 * @throws {RoutingError} `UnknownModel`, `NoHealthyPipeline`, or `InvalidRequest` for a bad number
 * or a state that is not `{ plan, nodes }`; {@link PlanError} `InvalidPlan` for a plan with a gap or an overlap.
 * @example
 * const route = routeRequest('base', { tokens: 512 }, SwarmState.fromPlan(plan));
 */
export function routeRequest(modelId: string, request: RoutingRequest, state: SwarmStateLike): Route {
  const r = resolveRequest(request);
  checkStateLike(state, 'routeRequest');
  return routeResolved(modelId, r, state);
}

/** {@link routeRequest} with a resolved request and optional in-flight load (used by the runtime). */
export function routeResolved(modelId: string, r: ResolvedRequest, state: SwarmStateLike, extra?: ExtraLoad): Route {
  const model = requireModel(modelId, state);
  const pipelines = planIndex(state.plan).pipelinesByModel.get(modelId) ?? [];
  const best = cheapestIntact(pipelines, state.nodes, r, undefined, extra, model.layers);
  if (best === undefined) throw noHealthyPipeline(modelId, pipelines, state.nodes);
  return makeRoute(modelId, best.pipeline.id, best.pipeline.stages, state.nodes, r, false, extra, model.layers);
}

/** The error for a model with no intact copy, naming each copy and its dead nodes. */
export function noHealthyPipeline(modelId: string, pipelines: readonly Pipeline[], nodes: NodeStates): RoutingError {
  if (pipelines.length === 0) return new RoutingError('NoHealthyPipeline', `no live copy of model "${modelId}": the plan has no pipeline for it`);
  const why = pipelines.map((p) => `${p.id} (${deadNodesOf(p, nodes).join(', ')} down)`).join(', ');
  return new RoutingError('NoHealthyPipeline', `no live copy of model "${modelId}": pipelines ${why}`);
}
