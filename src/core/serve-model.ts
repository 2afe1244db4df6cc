import type { ExtraLoad, ResolvedRequest } from './cost.js';
import { isResolvedRequest } from './cost-checked.js';
import { describeValue } from './describe.js';
import { RoutingError } from './errors.js';
import { checkExtraLoad, failoverInSwarm } from './failover.js';
import { deadNodesOf, planIndex } from './plan-index.js';
import { checkStateLike, makeRoute, noHealthyPipeline, requireModel, routeResolved } from './route.js';
import type { Recovery, Route, SwarmStateLike } from './types.js';

/** How a swarm serves a model once its intact copies are gone. */
export interface ServeOptions {
  /** Serve the degraded survivors when no splice exists. @defaultValue false */
  readonly allowDegraded?: boolean;
  /** In-flight load per node. */
  readonly extra?: ExtraLoad;
}

/**
 * Checks the arguments of {@link serveModel} and {@link bestRecovery}: `r` as
 * {@link resolveRequest} returns it, a `{ plan, nodes }` state, options an object.
 * @throws {RoutingError} `InvalidRequest`; {@link PlanError} `InvalidPlan` for a plan with a gap or an overlap.
 */
function checkServeArgs(r: unknown, state: unknown, options: unknown, where: string): void {
  if (!isResolvedRequest(r)) {
    throw new RoutingError('InvalidRequest', `${where} needs a request as resolveRequest returns it, got ${describeValue(r)}`);
  }
  checkStateLike(state, where);
  if (options === null || typeof options !== 'object') throw new RoutingError('InvalidRequest', `${where} options must be an object { allowDegraded?, extra? }, got ${describeValue(options)}`);
  checkExtraLoad((options as ServeOptions).extra);
}

/**
 * The best recovery for a model with no intact copy: the cheapest splice over any broken
 * pipeline, else (if allowed) the degraded survivors with the fewest missing layers. Undefined
 * when the model has nothing left to serve with.
 * @throws {RoutingError} `UnknownModel`, `InvalidRequest` for bad arguments.
 */
export function bestRecovery(modelId: string, r: ResolvedRequest, state: SwarmStateLike, options: ServeOptions = {}): Recovery | undefined {
  checkServeArgs(r, state, options, 'bestRecovery');
  requireModel(modelId, state);
  const pipelines = planIndex(state.plan).pipelinesByModel.get(modelId) ?? [];
  let best: Recovery | undefined;
  for (const p of pipelines) {
    const dead = deadNodesOf(p, state.nodes);
    const first = dead[0];
    if (first === undefined) continue;
    const lost = makeRoute(modelId, p.id, p.stages, state.nodes, r, false, options.extra);
    let recovery: Recovery;
    try {
      recovery = failoverInSwarm(lost, first, state, { allowDegraded: options.allowDegraded === true, request: { tokens: r.tokens, weights: r.weights, penalties: r.penalties, costModel: r.costModel } }, options.extra);
    } catch (error) {
      if (error instanceof RoutingError && error.code === 'Unrecoverable') continue;
      throw error;
    }
    if (best === undefined || better(recovery, best)) best = recovery;
  }
  return best;
}

function missing(r: Recovery): number {
  return r.missingLayers.reduce((s, l) => s + l.layerEnd - l.layerStart, 0);
}

/** Splice beats degraded; then fewer missing layers; then lower cost (ties keep the earlier id). */
function better(a: Recovery, b: Recovery): boolean {
  if (a.degraded !== b.degraded) return !a.degraded;
  const ma = missing(a);
  const mb = missing(b);
  if (ma !== mb) return ma < mb;
  return a.route.cost < b.route.cost;
}

/**
 * What a swarm serves for a model (docs/design.md §7): the cheapest intact copy; when none is left, the
 * best recovery (a splice, else the degraded survivors if allowed).
 * @throws {RoutingError} `UnknownModel`, or `NoHealthyPipeline` when nothing is left to serve with,
 * `InvalidRequest` for bad arguments.
 */
export function serveModel(modelId: string, r: ResolvedRequest, state: SwarmStateLike, options: ServeOptions = {}): Route {
  checkServeArgs(r, state, options, 'serveModel');
  try {
    return routeResolved(modelId, r, state, options.extra);
  } catch (error) {
    if (!(error instanceof RoutingError) || error.code !== 'NoHealthyPipeline') throw error;
    const recovery = bestRecovery(modelId, r, state, options);
    if (recovery !== undefined) return recovery.route;
    requireModel(modelId, state);
    const pipelines = planIndex(state.plan).pipelinesByModel.get(modelId) ?? [];
    const base = noHealthyPipeline(modelId, pipelines, state.nodes);
    throw new RoutingError('NoHealthyPipeline', `${base.message}; no splice${options.allowDegraded === true ? ' and no survivor' : ''} can serve it`);
  }
}
