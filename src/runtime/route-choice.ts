/**
 * How the Swarm chooses a route from its read view (docs/design.md §4, docs/detection.md): the
 * index's best copy for a default request, else the scan; then again while a node of the route
 * newly stalled; and, for a reserved route, its watched nodes waiting for it to come back.
 */
import { DEFAULT_PENALTIES, tokensCost, type ResolvedRequest } from '../core/cost.js';
import { serveModel } from '../core/serve-model.js';
import type { Route, SwarmPlan } from '../core/types.js';
import type { SwarmView } from './swarm-view.js';
import type { LeasedRoute } from './types.js';

/** The route the index (default request) or the scan chooses now. */
export function chooseRoute(view: SwarmView, plan: SwarmPlan, modelId: string, r: ResolvedRequest, allowDegraded: boolean): Route {
  const best = r.isDefault ? view.table.best(modelId) : undefined;
  if (best === undefined) return serveModel(modelId, r, view.table.view(plan), { allowDegraded, extra: view.table.extra });
  const p = best.pipeline;
  return { modelId, pipelineId: p.id, stages: p.stages, cost: best.chain + tokensCost(r.tokens, r.weights), hops: p.stages.length - 1, degraded: false };
}

/**
 * Stalls grow with time alone: they are checked on the route chosen, which is chosen again until
 * none of its nodes newly stalled (docs/detection.md).
 */
export function unstalledRoute(view: SwarmView, now: () => number, choose: () => Route): Route {
  let route = choose();
  if (view.table.waits.size > 0) {
    const t = now();
    while (view.table.flagStalled(route.stages, t)) route = choose();
  }
  return route;
}

/** A reserved route's watched nodes wait for it to come back (docs/detection.md). */
export function awaitLeased(view: SwarmView, leased: LeasedRoute, now: number): void {
  if (view.watched.size === 0) return;
  const expectMs = leased.stages.reduce((sum, s) => sum + (view.table.get(s.nodeId)?.latencyMs ?? DEFAULT_PENALTIES.latencyMs), 0);
  view.table.wait(leased.stages.map((s) => s.nodeId).filter((n) => view.watched.has(n)), now, expectMs);
}
