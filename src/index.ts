/**
 * hecate-swarm: decides which copy of a model serves each inference request across a swarm of
 * machines, and what happens when a machine dies, comes back, joins or retires.
 *
 * The root entry is the library alone: the pure core, the statecharts and the runtime. It loads
 * no simulator, no schema library and no inspector; those live in `hecate-swarm/sim`,
 * `hecate-swarm/testing` and the CLI. Sessions (`hecate-swarm/sessions`), persistence
 * (`hecate-swarm/persistence`), replication (`hecate-swarm/replication`) and the prefix-cache
 * index (`hecate-swarm/prefix`) are subpaths too, so
 * a swarm that only routes does not carry them. Every value exported here is listed in docs/api.md's
 * root-entry table (a test checks it).
 * @packageDocumentation
 */

// The runtime: a swarm of node actors under the Swarm statechart.
export { createSwarm, swarmConfig, Swarm, systemClock, ManualClock, seededIds, randomIds } from './runtime/index.js';
export type {
  Clock,
  IdSource,
  SwarmStatus,
  SwarmConfig,
  SwarmOptions,
  SwarmRequest,
  RouteOptions,
  Lease,
  LeasedRoute,
  ReleaseOutcome,
  TelemetrySample,
  Rescue,
  GrowthRole,
  Growth,
  Relocation,
  Retirement,
  Revival,
  SwarmActor,
  SwarmContract,
  CommitMode,
  Committed,
  LifecycleCommand,
  LifecycleResult,
  NodeLifecycle,
  NodeState,
  OwnMark,
  TimeSource,
  SwarmEmitted,
  LiveStatus,
  DownCause,
  AliveCause,
  NodeRecord,
  PrefixStats,
  PrefixPlugin,
  Rebalance,
  RebalancerPlugin,
} from './runtime/index.js';
// Failure detection and ejection settings (docs/detection.md).
export type { PhiOptions } from './core/phi.js';
export type { EjectionOptions } from './core/ejection.js';
// Admission (docs/admission.md).
export type { AdmissionConfig, AdmitOptions } from './core/admission-config.js';
export type { Saturation, CopySaturation } from './runtime/saturation.js';

// The pure core: plan, state, route, failover, cost, errors.
export { planSwarm, validatePlan, SwarmState, routeRequest, failoverInSwarm, resumeRoute, copyTimes, nodeCost, pipelineCost, DEFAULT_WEIGHTS, DEFAULT_PENALTIES } from './core/index.js';
export { RoutingError, PlanError, SwarmError, SessionError } from './core/index.js';
export type {
  NodeProfile,
  ModelKind,
  ModelSpec,
  Stage,
  Pipeline,
  SwarmPlan,
  NodeTelemetry,
  NodeStates,
  SwarmStateLike,
  CostWeights,
  CostPenalties,
  CostModel,
  CopyTime,
  RoutingRequest,
  Route,
  LayerRange,
  Replacement,
  RecoveryStrategy,
  Recovery,
  PlanConfig,
  PlanIssue,
  PlanIssueCode,
  TelemetryPatch,
  FailoverOptions,
  ExtraLoad,
  RoutingErrorCode,
  PlanErrorCode,
  SwarmErrorCode,
  SessionErrorCode,
  StageAttempt,
  StageAttemptOutcome,
  ResumeOptions,
  ResumePreference,
  ResumeStrategy,
  Resumption,
  Prompt,
} from './core/index.js';

// The statecharts and their context types are internal: `hecate-swarm/machines`.
