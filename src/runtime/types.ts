import type { AdmissionConfig } from '../core/admission-config.js';
import type { InspectionEvent, Observer } from 'xstate';
import type { GrowthResult, GrowthRole, RescueResult, IdSource, ModelSpec, NodeProfile, Relocation, RetirementResult, Route, RoutingRequest } from '../core/types.js';
import type { PlanConfig } from '../core/plan.js';
import type { PhiOptions } from '../core/phi.js';
import type { EjectionOptions } from '../core/ejection.js';
import type { RebalancerPlugin } from './rebalance-hook.js';
export type { Rebalance, RebalancerHook, RebalancerPlugin, RebalanceHost } from './rebalance-hook.js';
import type { PrefixPlugin } from './prefix-hook.js';

/**
 * Milliseconds since an arbitrary origin, and timers on the same time line; replace it to run in
 * virtual time. It is also XState's actor clock (delayed transitions: detection, bans), so its
 * `setTimeout`/`clearTimeout` have XState's shape. {@link ManualClock} implements it.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** A clock that only tells the time: leases use it, and the actors' timers stay on the host's clock. */
export type TimeSource = Pick<Clock, 'now'>;

/** The swarm's status, one per state of the Swarm statechart. */
export type SwarmStatus = 'healthy' | 'degraded' | 'failed' | 'stopped';

/** What a swarm serves and how it behaves. Build the simple case with `swarmConfig(layers, pipelines)`. */
export interface SwarmConfig extends PlanConfig {
  readonly models: readonly ModelSpec[];
  /** Serve the survivors of a lost copy (with layers missing) rather than fail. @defaultValue true */
  readonly allowDegraded?: boolean;
  /** EWMA smoothing factor of every node actor, in (0, 1]. @defaultValue 0.3 */
  readonly alpha?: number;
  /** How long a reservation lives before it expires on its own, in ms. @defaultValue 30000 */
  readonly leaseTtlMs?: number;
  /**
   * The latency sample, in ms, that `release(lease, { ok: false })` feeds into each live node of
   * the failed route, so a fail-fast node stops looking idle; a session's failed stage feeds it to
   * the one node that failed (docs/sessions.md). @defaultValue 1000
   */
  readonly failurePenaltyMs?: number;
  /**
   * Released latencies feed a node's EWMA at most once per this many ms: those released inside a
   * window are held, and fed as one mean with the release that closes it. The first release after
   * a quiet window goes in at once (what was held across the gap goes in first, on its own). One
   * request's latency is a noisy sample: fed one by one, at a few hundred releases a second the
   * EWMA (α per sample) would remember only the last few requests. 0 feeds every release alone.
   * @defaultValue 400
   */
  readonly releaseSampleMs?: number;
  /**
   * The phi-accrual failure detector of every node actor (docs/detection.md). Detection is opt-in
   * per node: it starts at the node's first `swarm.heartbeat`. @defaultValue Akka's: threshold 8,
   * 1 s expected interval, 3 s acceptable pause, 100 ms minimum deviation, 1,000 samples
   */
  readonly failureDetector?: PhiOptions;
  /**
   * Passive ejection from `release(lease, { ok: false })`. @defaultValue 5 consecutive failures,
   * a 15 s ban doubling up to 300 s, at most half the nodes ejected at once
   */
  readonly ejection?: EjectionOptions;
  /** How `swarm.admit` queues when every copy is full (docs/admission.md). @defaultValue a queue of 1024, strict bands, FIFO */
  readonly admission?: AdmissionConfig;
}

/** Options of `createSwarm`: the things that make a run observable and deterministic. */
export interface SwarmOptions {
  /** An XState inspection observer, passed to the Swarm actor and its node actors. */
  readonly inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** Where new pipeline and lease ids come from. @defaultValue nanoid */
  readonly idSource?: IdSource;
  /** Seeds a deterministic id source (ignored when `idSource` is given). */
  readonly seed?: number;
  /**
   * The clock for lease expiry and release windows, and the actors' clock for delayed
   * transitions (failure detection, ejection bans). A clock with only `now()` times leases alone
   * and leaves the timers on the host's clock. @defaultValue {@link systemClock}
   */
  readonly clock?: Clock | TimeSource;
  /**
   * Put before every lease id (`lease-1` becomes `<namespace>lease-1`), so that swarms whose leases
   * meet in one place never share an id: a replicated swarm sets it to its replica id.
   * At most 64 characters. @defaultValue ''
   */
  readonly leaseNamespace?: string;
  /**
   * The prefix-cache index, `prefixCache(options)` of `hecate-swarm/prefix` (docs/prefix-cache.md).
   * Without it a prompt only sets `tokens`: routes carry no `cachedTokens`, a release's
   * `cachedTokens` is ignored and `prefixStats()` is all zeros. A restored swarm takes it again.
   * @defaultValue none
   */
  readonly prefixCache?: PrefixPlugin;
  /**
   * The rebalancer, `rebalancer(options)` of `hecate-swarm/rebalance` (docs/rebalance.md): with it,
   * `swarm.rebalance()` moves spans to where counted-once throughput needs them, and its `everyMs`
   * runs it on an interval. @defaultValue none: `rebalance()` throws `InvalidInput`
   */
  readonly rebalancer?: RebalancerPlugin;
}

/** A request to the swarm: the routing request, plus which model (the base model by default). */
export interface SwarmRequest extends RoutingRequest {
  readonly model?: string;
  /**
   * `false`: the prefix-cache index (if the swarm has one) neither reads nor learns this
   * request's prompt (no `cachedTokens`); its tokens are priced as uncached. @defaultValue true
   */
  readonly cache?: boolean;
}

/** Options of `swarm.route`. */
export interface RouteOptions {
  /** Count this request as in flight on the route's nodes until released or expired. @defaultValue false */
  readonly reserve?: boolean;
}

/** An in-flight reservation on a route's nodes. */
export interface Lease {
  readonly id: string;
  readonly modelId: string;
  readonly nodes: readonly string[];
  readonly expiresAt: number;
}

/** A route with its reservation. */
export interface LeasedRoute extends Route {
  readonly lease: Lease;
}

/** How a reserved request ended. */
export interface ReleaseOutcome {
  /** Observed end-to-end latency, fed into each node's latency EWMA. */
  readonly latencyMs?: number;
  /** @defaultValue true */
  readonly ok?: boolean;
  /**
   * With `ok: false`, the node that failed, when the caller knows it: only it counts the failure
   * towards ejection. Unknown, every node of the route counts it.
   */
  readonly failedNode?: string;
  /**
   * The prompt tokens the copy found cached when it served the request (the node's report, as
   * OpenAI-compatible servers give `cached_tokens`): corrects the prefix-cache index's estimate
   * for that copy (docs/prefix-cache.md); checked, and ignored by a swarm without the index.
   */
  readonly cachedTokens?: number;
  /**
   * The request says nothing of its nodes (the deadline passed, the client left): no proof of
   * life, no failure, no latency for any of them. Takes no `ok`, `latencyMs` or `failedNode`.
   * @defaultValue false
   */
  readonly neutral?: boolean;
  /**
   * The node that answered it was at capacity (an agent's 503 `Full`): routing sees it as costly
   * for a while (`failurePenaltyMs` into its latency, as for a failure), but nothing counts towards
   * its ejection and nothing is a proof of life, for it or the route's other nodes. Neutral
   * otherwise: takes no `ok`, `latencyMs` or `failedNode`.
   */
  readonly busyNode?: string;
}

/** One telemetry sample for a node's EWMA. */
export interface TelemetrySample {
  readonly load?: number;
  readonly latencyMs?: number;
  readonly score?: number;
}

/** What `markDown` did: one recovery per model whose route used the node, computed before the mark. */
export interface Rescue extends RescueResult {
  readonly status: SwarmStatus;
}


/** What `addNode` did. */
export interface Growth extends GrowthResult {
  readonly nodeId: string;
  readonly status: SwarmStatus;
}

/** What `removeNode` did. */
export interface Retirement extends RetirementResult {
  readonly nodeId: string;
  readonly status: SwarmStatus;
}

/** What `markAlive` did. */
export interface Revival {
  readonly nodeId: string;
  readonly status: SwarmStatus;
}

export type { NodeProfile, GrowthRole, IdSource, Relocation };
