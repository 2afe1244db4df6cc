/**
 * The load simulation: a seeded discrete-event simulation of requests through pipelines of
 * heterogeneous speed, comparing load-balancing policies side by side. Pure: no IO.
 */
export { runLoadSim, selectWorkloads, median, LOAD_SIM_LIMITS } from './run.js';
export type { LoadSimOptions, LoadSimResult, PolicyResult, WorkloadResult } from './run.js';
export { runEngine, simClock, OUTCOME } from './engine.js';
export type { EngineOptions, EngineTrace, MonitorOptions, SimClock } from './engine.js';
export { EventQueue } from './event-queue.js';
export { createRng, deriveSeed } from './rng.js';
export type { Rng } from './rng.js';
export { buildTopology, DEFAULT_TOPOLOGY } from './load-topology.js';
export type { BuiltTopology, LoadTopology, SimNodeSpec } from './load-topology.js';
export { WORKLOADS, DEFAULT_SIZE_CV } from './workloads.js';
export type { Arrival, Disruption, Workload, WorkloadSpec } from './workloads.js';
export { POLICIES } from './policies.js';
export type { Policy, Router, RouterContext, Pick, Outcome } from './router.js';
export { measure, quantile, CDF_LEVELS } from './metrics.js';
export type { RunMetrics } from './metrics.js';
export { evaluateTargets } from './targets.js';
export type { TargetResult } from './targets.js';
export { resultsTable, sharesTable } from './table.js';
export { cdfSvg, cdfSvgs } from './svg.js';
export { runSessionSim, sessionTable, W6_ID, W6_STRATEGIES, W6_TOPOLOGY, PREFILL_INPUTS_PER_STEP } from './session-sim.js';
export type { SessionSimOptions, SessionSimResult, W6Figures, W6Strategy } from './session-sim.js';
export { DigestNodes, DigestReference, runLayers, mix } from '../../core/digest-model.js';
export type { LayerCaches } from '../../core/digest-model.js';
export { VirtualTimers } from './virtual-timers.js';
export { runOverload, W8_CLASSES, W8_ADMISSION, OVERLOAD_POLICIES } from './overload-sim.js';
export type { OverloadClass, OverloadOptions, OverloadPolicy, OverloadResult, OverloadClassResult } from './overload-sim.js';
export { runOverloadComparison, overloadTable, overloadTargets, W8_ID, W8_DEFAULT_REQUESTS } from './overload-comparison.js';
export type { OverloadComparison, OverloadComparisonOptions, OverloadRow, LightRow, OverloadTarget } from './overload-comparison.js';
export { W7_FULL_REQUESTS, W7_DEFAULT_REQUESTS, W7_WORK_LIMIT, w7Scale } from './prefix-requests.js';
