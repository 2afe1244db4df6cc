/**
 * `hecate-swarm/rebalance`: the rebalancer (docs/rebalance.md), its own entry so a swarm that
 * never rebalances does not carry it. Plug it into a swarm through its options:
 * `createSwarm(profiles, config, { rebalancer: rebalancer() })`, then `swarm.rebalance()`.
 * @packageDocumentation
 */
export { rebalancer, REBALANCE_EVERY_MS } from './rebalancer.js';
export type { RebalancerOptions } from './rebalancer.js';
export { proposeMoves } from './propose-moves.js';
export type { MoveKind, RebalanceMove, RebalanceProposal } from './propose-moves.js';
export { REBALANCE_DEFAULTS, rebalanceOptionsIssue, resolveRebalanceOptions } from './rebalance-options.js';
export type { RebalanceOptions, ResolvedRebalanceOptions } from './rebalance-options.js';
export { planLayersMoved } from './plan-layers-moved.js';
export { independentMoves } from './independent-moves.js';
export { missingRanges, spanLoads, loadSeconds } from './move-cost.js';
export type { SpanLoad } from './move-cost.js';
export { MoveRunner, moveOrder } from './move-runner.js';
export type { LoadReport, RunnerPolicy } from './move-runner.js';
export type { Rebalance, RebalanceDecision, PlannedMove, PlannedLoad, RebalanceHost, RebalancerHook, RebalancerPlugin, SpanOrder, MoveEvent } from '../runtime/rebalance-hook.js';
