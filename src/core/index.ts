export type * from './types.js';
export { RoutingError, PlanError, SwarmError } from './errors.js';
export type { RoutingErrorCode, PlanErrorCode, SwarmErrorCode } from './errors.js';
export { DEFAULT_WEIGHTS, DEFAULT_PENALTIES, resolveRequest } from './cost.js';
// The exported cost functions check their arguments; routing uses the unchecked ones of cost.ts.
export { nodeCost, pipelineCost, chainCost, hopsCost, tokensCost } from './cost-checked.js';
export type { ResolvedRequest, ExtraLoad } from './cost.js';
export { planSwarm } from './plan.js';
export type { PlanConfig } from './plan.js';
export { validatePlan, baseModelId, PLAN_LIMITS } from './validate.js';
export type { PlanIssue, PlanIssueCode } from './validate.js';
export { SwarmState } from './state.js';
export type { TelemetryPatch } from './state.js';
export { routeRequest } from './route.js';
export { failoverInSwarm } from './failover.js';
export type { FailoverOptions } from './failover.js';
export { serveModel, bestRecovery } from './serve.js';
export type { ServeOptions } from './serve.js';
export { mulberry32, uniform } from './random.js';
