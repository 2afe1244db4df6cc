import { createActor, type Actor, type SnapshotFrom } from 'xstate';
import { badSampleField, effectiveValues, sampleProblem, type NodeContext } from '../../machines/node.machine.js';
import { isMember, joinIssue, swarmMachine, type NodeActorRef, type SwarmEmitted, type SwarmEvent, type SwarmOutcome } from '../../machines/swarm.machine.js';
import { checkReleaseOutcome, checkRouteOptions } from '../core/arguments.js';
import { DEFAULT_PENALTIES, resolveRequest, tokensCost, type ResolvedRequest } from '../core/cost.js';
import { describeValue } from '../core/describe.js';
import { PlanError, RoutingError, SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import { planSwarm } from '../core/plan.js';
import { routeResolved } from '../core/route.js';
import { serveModel } from '../core/serve.js';
import type { SwarmState } from '../core/state.js';
import { swarmConfigIssue, swarmOptionsIssue } from '../core/swarm-config.js';
import type { ModelSpec, NodeProfile, NodeTelemetry, Route } from '../core/types.js';
import { baseModelId } from '../core/validate.js';
import { systemClock } from './clock.js';
import { randomIds } from './ids.js';
import { LeaseTable } from './lease-table.js';
import { NodeWatchers } from './node-watchers.js';
import { ReleaseSampler } from './release-sampler.js';
import { plainProfile, type Restored } from './persist.js';
import { SUSPECTED, TelemetryTable } from './telemetry-table.js';
import type { AliveCause } from '../../machines/node.machine.js';
import type {
  Clock,
  Growth,
  Lease,
  LeasedRoute,
  ReleaseOutcome,
  Rescue,
  Retirement,
  Revival,
  RouteOptions,
  SwarmConfig,
  SwarmOptions,
  SwarmRequest,
  SwarmStatus,
  TelemetrySample,
  TimeSource,
} from './types.js';

/** The running Swarm actor. */
export type SwarmActor = Actor<typeof swarmMachine>;
type SwarmSnapshot = SnapshotFrom<typeof swarmMachine>;

/** A telemetry sample as plain data, each field read once; one shape whatever it carries. */
function plainSample(sample: TelemetrySample): TelemetrySample {
  if (sample === null || typeof sample !== 'object') return sample;
  const { load, latencyMs, score } = sample;
  // An unknown key makes the sample BadTelemetry whatever its values: keep it so the check sees it.
  for (const key in sample) if (key !== 'load' && key !== 'latencyMs' && key !== 'score') return { ...sample };
  return { load, latencyMs, score };
}

/**
 * A live node's table entry from its actor's context: `alive`, `samples` and the effective values
 * (measured EWMA, else declared), frozen. Once every field is known (the usual case) it is one
 * object literal of one shape; `effectiveValues` adding fields one by one to a two-field literal
 * grew a second backing store on every report. A field never measured keeps the previous entry's
 * value, which is the declared one: read from the entry just read, not from `ctx.settings.declared` (a
 * cache miss per report at 8,000 nodes).
 */
function telemetryEntry(ctx: NodeContext, previous: NodeTelemetry): NodeTelemetry {
  const { load, samples } = ctx;
  const latencyMs = ctx.latencyMs ?? previous.latencyMs;
  const score = ctx.score ?? previous.score;
  if (load !== undefined && latencyMs !== undefined && score !== undefined) return Object.freeze({ alive: true, samples, load, latencyMs, score });
  return Object.freeze(effectiveValues<{ -readonly [K in keyof NodeTelemetry]: NodeTelemetry[K] }>(ctx, { alive: true, samples }));
}

/**
 * A swarm at run time: a thin façade over the Swarm statechart, which decides every lifecycle
 * step (rescue before mark, growth, retirement, status) from its own context. The façade sends
 * events and reads snapshots. What it keeps itself must stay off the chart for speed: the
 * telemetry table and routing index that `route` reads without an actor message, the leases and
 * the release window. Create it with {@link createSwarm}.
 */
export class Swarm {
  /** The running Swarm actor (the node actors are in its system). */
  readonly actor: SwarmActor;
  private readonly table: TelemetryTable;
  private readonly leases: LeaseTable;
  private readonly sampler: ReleaseSampler;
  private readonly baseModel: string;
  private readonly allowDegraded: boolean;
  private readonly leaseTtlMs: number;
  private readonly failurePenaltyMs: number;
  /** Running session stage calls waiting on a node going down (pushed, not polled; `hecate-swarm/sessions`). */
  private readonly downWatchers = new NodeWatchers();
  private readonly clock: TimeSource;
  /** Whether the clock keeps timers (it is the actors' clock); heartbeats need it. */
  private readonly timers: boolean;
  /** Nodes whose failure detection has started (at their first heartbeat). */
  private readonly watched = new Set<string>();
  /** The profiles and config it was created with: a persisted swarm carries their digests (`hecate-swarm/persistence`). */
  protected readonly genesis: readonly [readonly NodeProfile[], SwarmConfig];

  /**
   * @internal use {@link createSwarm}; `restored` is a persisted swarm checked against these
   * profiles and config (`restoreSwarm` of `hecate-swarm/persistence`).
   */
  constructor(profiles: readonly NodeProfile[], config: SwarmConfig, options: SwarmOptions = {}, restored?: Restored) {
    const issue = swarmConfigIssue(config) ?? swarmOptionsIssue(options);
    if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
    const given = Array.isArray(profiles) ? profiles.map(plainProfile) : profiles;
    this.genesis = [given, config];
    const members = restored?.profiles ?? given;
    const plan = restored?.plan ?? deepFreeze(planSwarm(members, config));
    this.baseModel = baseModelId(plan.models);
    this.allowDegraded = config.allowDegraded ?? true;
    this.leaseTtlMs = config.leaseTtlMs ?? 30_000;
    this.failurePenaltyMs = config.failurePenaltyMs ?? 1000;
    this.table = new TelemetryTable(plan, members);
    if (restored !== undefined) for (const id of restored.restore.down.keys()) this.table.setAlive(id, false);
    this.clock = options.clock ?? systemClock;
    this.leases = new LeaseTable(this.leaseTtlMs, this.clock, (nodeId, delta) => this.table.addInflight(nodeId, delta), options.leaseIdPrefix);
    this.sampler = new ReleaseSampler(config.releaseSampleMs ?? 400);
    const table = this.table;
    this.actor = createActor(swarmMachine, {
      input: {
        plan,
        profiles: members,
        alpha: config.alpha ?? 0.3,
        allowDegraded: this.allowDegraded,
        telemetry: table.nodes,
        inflight: table.extra,
        index: { best: (m) => table.best(m), bestWithout: (m, n) => table.bestWithout(m, n), doubted: () => table.suspects > 0 },
        ...(restored?.ids != null ? { idSeed: restored.ids } : options.idSource !== undefined ? { idSource: options.idSource } : options.seed !== undefined ? { idSeed: options.seed } : { idSource: randomIds }),
        ...(restored !== undefined ? { restore: restored.restore } : {}),
        ...(config.failureDetector !== undefined ? { failureDetector: config.failureDetector } : {}),
        ...(config.ejection !== undefined ? { ejection: config.ejection } : {}),
        ...(options.propose === true ? { propose: true } : {}),
      },
      ...(options.inspect !== undefined ? { inspect: options.inspect } : {}),
      ...(isTimerClock(options.clock) ? { clock: options.clock } : {}),
    });
    this.timers = options.clock === undefined || isTimerClock(options.clock);
    // The statechart marks nodes down and alive on its own too (detector, ejection, bans): the
    // live table follows what it emits. Registered first, so the orchestrator's handlers see it done.
    this.actor.on('node.down', (e) => {
      this.table.setAlive(e.nodeId, false);
      this.sampler.forget(e.nodeId); // what it served before dying says nothing of it when back
      this.downWatchers.notify(e.nodeId); // whatever the cause: the session calls on it re-route now
    });
    this.actor.on('node.alive', (e) => this.table.setAlive(e.nodeId, true));
    this.actor.on('node.suspected', (e) => this.table.doubt(e.nodeId, SUSPECTED, true));
    this.actor.start();
  }

  /** The swarm's status: the Swarm statechart's current state. */
  status(): SwarmStatus {
    return this.actor.getSnapshot().value as SwarmStatus;
  }

  /** The current plan and telemetry as an immutable {@link SwarmState} (plain data). */
  state(): SwarmState {
    return this.table.state(this.actor.getSnapshot().context.plan);
  }

  /**
   * Routes one request (docs/design.md §4, §7): the cheapest intact copy of the model (the base
   * model unless `request.model` names another); when none is left, the best recovery — a
   * splice, else the degraded survivors. With `{ reserve: true }` the route carries a lease and
   * counts as in flight on its nodes until released or expired.
   * @throws {RoutingError} `UnknownModel`, `NoHealthyPipeline`, `InvalidRequest` for a malformed
   *   request or options, an unknown key among them included (docs/inputs.md)
   * @throws {SwarmError} `Stopped`
   * @example const route = swarm.route({ tokens: 512 });
   */
  route(request?: SwarmRequest): Route;
  route(request: SwarmRequest | undefined, options: RouteOptions & { reserve: true }): LeasedRoute;
  route(request?: SwarmRequest, options?: RouteOptions): Route | LeasedRoute;
  route(request: SwarmRequest = {}, options: RouteOptions = {}): Route | LeasedRoute {
    if (this.actor.getSnapshot().status !== 'active') this.running(); // throws Stopped
    checkRouteOptions(options);
    const r = resolveRequest(request); // before any change: it rejects a malformed request or an unknown key
    if (this.leases.size > 0) this.leases.expire();
    const modelId = request.model ?? this.baseModel;
    if (typeof modelId !== 'string') throw new RoutingError('InvalidRequest', `request field "model" must be a model id string, got ${String(modelId)}`);
    const route = this.unstalled(() => this.choose(modelId, r));
    if (options?.reserve !== true) return route;
    const leased = this.reserved(route);
    // Its watched nodes wait for it to come back (docs/detection.md).
    if (this.watched.size > 0) {
      const expectMs = route.stages.reduce((sum, s) => sum + (this.table.get(s.nodeId)?.latencyMs ?? DEFAULT_PENALTIES.latencyMs), 0);
      this.table.wait(leased.stages.map((s) => s.nodeId).filter((n) => this.watched.has(n)), this.leases.now().now, expectMs);
    }
    return leased;
  }

  /** The route with a lease on its nodes (each once), counted as in flight. */
  private reserved(route: Route): LeasedRoute {
    return { ...route, lease: this.leases.reserve(route.modelId, [...new Set(route.stages.map((s) => s.nodeId))]) };
  }

  /** The route the index (default request) or the scan chooses now. */
  private choose(modelId: string, r: ResolvedRequest): Route {
    const best = r.isDefault ? this.table.best(modelId) : undefined;
    if (best === undefined) return serveModel(modelId, r, this.table.view(this.actor.getSnapshot().context.plan), { allowDegraded: this.allowDegraded, extra: this.table.extra });
    const p = best.pipeline;
    return { modelId, pipelineId: p.id, stages: p.stages, cost: best.chain + tokensCost(r.tokens, r.weights), hops: p.stages.length - 1, degraded: false };
  }

  /**
   * Stalls grow with time alone: they are checked on the route chosen, which is chosen again
   * until none of its nodes newly stalled (docs/detection.md).
   */
  private unstalled(choose: () => Route): Route {
    let route = choose();
    if (this.table.waits.size > 0) {
      const now = this.leases.now().now;
      while (this.table.flagStalled(route.stages, now)) route = choose();
    }
    return route;
  }

  /** The scan for a request, bypassing the index (for benchmarks and equivalence tests); it sees stalls, and flags them, as route does. */
  routeByScan(request: SwarmRequest = {}): Route {
    this.running();
    const r = resolveRequest(request);
    const modelId = request.model ?? this.baseModel;
    return this.unstalled(() => routeResolved(modelId, r, this.table.view(this.actor.getSnapshot().context.plan), this.table.extra));
  }

  /**
   * Ends a reservation: its nodes stop counting it, and an observed latency feeds their EWMA
   * (split over the route's nodes in proportion to their current latency estimates). A refused
   * call changes nothing: the lease stays open.
   * @throws {SwarmError} `UnknownLease` for a lease never issued, already released or expired;
   *   `BadTelemetry` for a bad outcome (an unknown key, a wrong type, a latency past its bound:
   *   docs/inputs.md); `Stopped`
   */
  release(lease: Lease | string, outcome: ReleaseOutcome = {}): void {
    this.running();
    if (this.leases.size > 0) this.leases.expire();
    const id: unknown = typeof lease === 'string' ? lease : lease !== null && typeof lease === 'object' ? lease.id : undefined;
    if (!this.leases.isOpen(id)) {
      throw new SwarmError('UnknownLease', `unknown lease "${String(id)}": never issued, already released, or expired after ${this.leaseTtlMs} ms`);
    }
    const { latencyMs, ok, failedNode } = checkReleaseOutcome(outcome, id); // each field read once
    const nodes = this.leases.held(id) ?? [];
    // A failed node that has left the swarm since (removeNode drops it from every lease) is no
    // error: there is nothing left to charge. A member the lease does not hold is a wrong name.
    if (failedNode !== undefined && !nodes.includes(failedNode) && this.actor.getSnapshot().context.members.has(failedNode)) {
      throw new SwarmError('BadTelemetry', `release of lease "${String(id)}": "failedNode" must be one of the lease's nodes (${nodes.join(', ')}), got ${String(failedNode)}`);
    }
    const held = this.leases.end(id) ?? [];
    this.feedOutcome(held, ok === false, failedNode);
    if (ok !== false && this.table.waits.size > 0) this.table.answered(held, this.leases.now().now);
    const live = held.filter((n) => this.table.get(n)?.alive === true);
    if (ok === false) {
      // A failure is a signal too: otherwise a fail-fast node looks idle, hence cheapest, until
      // the monitor marks it down. The named node pays; when none is named, every node of the route.
      const penalty = Math.max(latencyMs ?? 0, this.failurePenaltyMs);
      for (const n of live) if (failedNode === undefined || n === failedNode) this.ingest(n, { latencyMs: penalty });
    } else if (latencyMs !== undefined) {
      const estimates = live.map((n) => this.table.get(n)?.latencyMs ?? 0);
      const total = estimates.reduce((s, x) => s + x, 0);
      const now = this.leases.now().now;
      live.forEach((n, i) => {
        const share = total > 0 ? (estimates[i] ?? 0) / total : 1 / live.length;
        for (const fed of this.sampler.sample(n, latencyMs * share, now)) this.ingest(n, { latencyMs: fed });
      });
    }
  }

  /**
   * Records a heartbeat of a node: its failure detector starts at the first one (detection is
   * opt-in per node) and, from then on, takes the node down when phi crosses the threshold
   * (docs/detection.md). A heartbeat brings back a node the detector took down, never one the
   * orchestrator marked down. `report` and a successful `release` also count as proof of life.
   * @throws {SwarmError} `UnknownNode`, `Stopped`, `InvalidInput` when the swarm's clock has no timers
   * @example setInterval(() => swarm.heartbeat('gpu'), 1000);
   */
  heartbeat(nodeId: string): void {
    const snapshot = this.running();
    const member = snapshot.context.members.get(nodeId);
    if (member === undefined) throw this.unknownNode(snapshot, nodeId);
    if (!this.timers) {
      throw new SwarmError('InvalidInput', `heartbeat of node "${nodeId}": the swarm's clock has only now(); create the swarm with a clock that also has setTimeout and clearTimeout (systemClock, ManualClock) to detect failures`);
    }
    this.watched.add(nodeId);
    member.ref.send({ type: 'node.heartbeat', at: this.clock.now() });
    this.table.doubt(nodeId, SUSPECTED, false); // a heartbeat takes a suspect back to watching
  }

  /**
   * Listens to what the Swarm statechart emits: `node.suspected`, `node.down` (with the rescue,
   * computed before the mark, and the cause: `manual`, `detector` or `ejected`), `node.alive`
   * (with the cause) and `status.changed`; `'*'` for all. Handlers run after the transition, in
   * the order they were added. Returns a function that removes the handler.
   * @example const off = swarm.on('node.down', (e) => console.log(e.nodeId, e.cause, e.rescue.recoveries)); off();
   */
  on<T extends SwarmEmitted['type'] | '*'>(type: T, handler: (event: T extends '*' ? SwarmEmitted : Extract<SwarmEmitted, { type: T }>) => void): () => void {
    const subscription = this.actor.on(type as never, handler as never);
    return () => subscription.unsubscribe();
  }

  /**
   * How many reservations are in flight: issued by `route(…, { reserve: true })`, neither
   * released nor past their expiry.
   * @throws {SwarmError} `Stopped`
   */
  inFlight(): number {
    this.running();
    return this.leases.inFlight();
  }

  /**
   * Marks a node down. The statechart's `node.down` first computes the rescue — the failover of
   * every model whose served route uses the node, from its liveness before the mark — then marks
   * it, then re-derives the status. A node already down: no-op.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   * @example const rescue = swarm.markDown('gpu'); rescue.recoveries[0]?.route;
   */
  markDown(nodeId: string): Rescue {
    return this.takeDown(nodeId, { type: 'node.down', nodeId });
  }

  /** A node down for the statechart's `node.down` (manual, detector) or `node.eject`. */
  private takeDown(nodeId: string, event: SwarmEvent): Rescue {
    const before = this.running();
    this.actor.send(event);
    const after = this.actor.getSnapshot();
    const outcome = this.taken(before, after, nodeId);
    if (outcome?.kind !== 'rescue') return Object.freeze({ nodeId, status: this.status(), recoveries: [], unrecoverable: [] });
    this.table.setAlive(nodeId, false);
    this.sampler.forget(nodeId); // what it served before dying says nothing of it when back
    this.downWatchers.notify(nodeId); // after the table says so (the emitted node.down told them already, if any)
    return Object.freeze({ nodeId, status: after.value as SwarmStatus, recoveries: outcome.recoveries, unrecoverable: outcome.unrecoverable });
  }

  /**
   * Marks a node alive again; its EWMAs keep their last values. A node already alive: no-op.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   */
  markAlive(nodeId: string): Revival {
    return this.revive(nodeId, 'manual');
  }

  /** A node back, for the statechart's `node.alive` with its cause. */
  private revive(nodeId: string, cause: AliveCause, logged = false): Revival {
    const before = this.running();
    this.actor.send({ type: 'node.alive', nodeId, cause, logged });
    const after = this.actor.getSnapshot();
    if (this.taken(before, after, nodeId)?.kind === 'revival') this.table.setAlive(nodeId, true);
    return Object.freeze({ nodeId, status: after.value as SwarmStatus });
  }

  /**
   * Adds a node without restart. The statechart's telomerase decides its role: restore a missing
   * copy, add a copy, host an expert, or wait as a spare. Existing intact pipelines are untouched.
   * @throws {SwarmError} `InvalidInput` for a bad profile, `DuplicateNode`, `Stopped`
   */
  addNode(profile: NodeProfile): Growth {
    const before = this.running();
    const plain = plainProfile(profile);
    this.actor.send({ type: 'node.added', profile: plain });
    const after = this.actor.getSnapshot();
    if (after === before) {
      const issue = joinIssue(before.context, plain) ?? { code: 'InvalidInput' as const, message: 'cannot add node: refused' };
      throw new SwarmError(issue.code, issue.message);
    }
    const o = this.decided(after.context.outcome);
    if (o.kind !== 'growth') throw new SwarmError('InvalidInput', `cannot add node: the swarm took ${o.kind} for it`);
    this.table.join(o.profile);
    this.table.adopt(after.context.plan);
    return Object.freeze({ nodeId: o.nodeId, role: o.role, ...(o.modelId !== undefined ? { modelId: o.modelId } : {}), pipelines: o.pipelines, replaced: o.replaced, status: after.value as SwarmStatus });
  }

  /**
   * Retires a node; the statechart's telomerase relocates its layers to live nodes with room; a
   * copy that cannot be rebuilt is dropped whole and reported.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   */
  removeNode(nodeId: string): Retirement {
    const before = this.running();
    this.actor.send({ type: 'node.removed', nodeId });
    const after = this.actor.getSnapshot();
    const o = this.decided(this.taken(before, after, nodeId));
    if (o.kind !== 'retirement') throw new SwarmError('UnknownNode', `cannot remove node "${String(nodeId)}": the swarm took ${o.kind} for it`);
    this.leases.dropNode(nodeId);
    this.watched.delete(nodeId);
    this.table.leave(nodeId);
    this.sampler.forget(nodeId);
    this.table.adopt(after.context.plan);
    this.downWatchers.notify(nodeId); // a call on a node that left the swarm will never answer
    return Object.freeze({ nodeId, relocated: o.relocated, dropped: o.dropped, status: after.value as SwarmStatus });
  }

  /**
   * Feeds one telemetry sample into a node's EWMA (its actor). NaN, infinite or negative values,
   * values past their bounds (`TELEMETRY_LIMITS`, docs/inputs.md), unknown keys and a sample with
   * none of `load`, `latencyMs`, `score` are refused and leave the EWMA untouched. Telemetry for a down node is stale and ignored.
   * Returns the node's telemetry after the sample (frozen).
   * @throws {SwarmError} `BadTelemetry`, `UnknownNode`, `Stopped`
   * @example swarm.report('gpu', { load: 0.7, latencyMs: 9 });
   */
  report(nodeId: string, sample: TelemetrySample): NodeTelemetry {
    const snapshot = this.running();
    const member = snapshot.context.members.get(nodeId);
    if (member === undefined) throw this.unknownNode(snapshot, nodeId);
    const plain = plainSample(sample);
    // First: a report from a node the detector took down brings it back (a bad sample is no sign of life).
    if (this.watched.size > 0 && this.watched.has(nodeId) && badSampleField(plain) === undefined) this.seen(nodeId, member.ref);
    const current = this.table.nodes[nodeId] as NodeTelemetry;
    if (current.alive) {
      // The node actor's `goodSample` guard decides; a refused sample leaves the entry as it was
      // (ingest compares the actor's snapshots once: no second read here).
      const next = this.ingest(nodeId, plain, member.ref, current);
      if (next !== current) return next;
    }
    if (badSampleField(plain) !== undefined) throw new SwarmError('BadTelemetry', `telemetry for node "${nodeId}": ${sampleProblem(plain)}; the EWMA is unchanged`);
    return current; // down: its telemetry is stale by definition
  }

  /** Stops the swarm and its node actors; every later call but `status`/`state`/`stop` throws `Stopped`. */
  stop(): void {
    if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'swarm.stop' });
  }

  /**
   * The one narrow intake of telemetry: into the node actor, then its EWMAs back into the table.
   * A sample the actor refuses (or a down node) leaves the table as it was.
   */
  private ingest(
    nodeId: string,
    sample: TelemetrySample,
    ref = this.actor.getSnapshot().context.members.get(nodeId)?.ref,
    current = this.table.nodes[nodeId] as NodeTelemetry,
  ): NodeTelemetry {
    if (ref === undefined || !current.alive) return current;
    const before = ref.getSnapshot();
    ref.send({ type: 'node.telemetry', sample });
    const after = ref.getSnapshot();
    if (after === before) return current;
    // The node actor owns the EWMAs: its effective values, read back into a frozen table entry.
    const next = telemetryEntry(after.context, current);
    this.table.put(nodeId, next);
    return next;
  }

  /** A proof of life of a watched node: restarts its detector's wait, brings it back from a detector down. */
  private seen(nodeId: string, ref: NodeActorRef): void {
    ref.send({ type: 'node.seen', at: this.clock.now() });
    this.table.doubt(nodeId, SUSPECTED, false); // so does any proof of life, without a report
  }

  /**
   * A released request's outcome, to its nodes' actors: a failure counts towards ejection (on the
   * named node, else on every node of the route); a success is a proof of life and clears the
   * failure count (sent only where there is one to clear, as releases are frequent).
   */
  private feedOutcome(held: readonly string[], failed: boolean, failedNode: string | undefined): void {
    const members = this.actor.getSnapshot().context.members;
    if (failed) {
      for (const n of failedNode !== undefined ? [failedNode] : held) {
        if (held.includes(n)) members.get(n)?.ref.send({ type: 'node.outcome', ok: false });
      }
      return;
    }
    for (const n of held) {
      const ref = members.get(n)?.ref;
      if (ref === undefined) continue;
      if (this.watched.has(n)) this.seen(n, ref);
      const ctx = ref.getSnapshot().context;
      if (ctx.health.failures > 0 || ctx.health.probation) ref.send({ type: 'node.outcome', ok: true });
    }
  }

  /** The snapshot, if the statechart is running; else `Stopped`. */
  private running(): SwarmSnapshot {
    const snapshot = this.actor.getSnapshot();
    if (snapshot.status !== 'active') {
      const why = snapshot.status === 'error' ? ` (the Swarm actor failed: ${String(snapshot.error)})` : '';
      throw new SwarmError('Stopped', `the swarm is stopped${why}; create a new one with createSwarm()`);
    }
    return snapshot;
  }

  /**
   * What the statechart decided for an event on `nodeId`: its outcome, or undefined when it did
   * not take the event (the snapshot is the same object) for a member — the event was a no-op.
   * @throws {SwarmError} `UnknownNode` when it did not take it because the node is no member.
   */
  private taken(before: SwarmSnapshot, after: SwarmSnapshot, nodeId: string): SwarmOutcome | undefined {
    if (after !== before) return after.context.outcome;
    if (!isMember(before.context, nodeId)) throw this.unknownNode(before, nodeId);
    return undefined;
  }

  /** The outcome of a plan change; `PlanError` when the statechart refused the telomerase's plan. */
  private decided(outcome: SwarmOutcome | undefined): SwarmOutcome {
    if (outcome === undefined) throw new SwarmError('InvalidInput', 'the swarm took no decision');
    if (outcome.kind === 'refused') throw new PlanError('InvalidPlan', outcome.reason);
    return outcome;
  }

  private unknownNode(snapshot: SwarmSnapshot, nodeId: unknown): SwarmError {
    const known = [...snapshot.context.members.keys()];
    const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, … (${known.length} nodes)` : known.join(', ');
    return new SwarmError('UnknownNode', `unknown node ${describeValue(nodeId)}: the swarm has ${list || 'no node'}`);
  }
}

/** Whether a clock also keeps timers, so it can be the actors' clock. */
function isTimerClock(clock: Clock | TimeSource | undefined): clock is Clock {
  return clock !== undefined && typeof (clock as Partial<Clock>).setTimeout === 'function' && typeof (clock as Partial<Clock>).clearTimeout === 'function';
}

/**
 * Creates and starts a swarm: plans every copy of every model over `profiles`, spawns one actor
 * per node and the Swarm statechart over them.
 * @throws {PlanError} for bad profiles or models, or `InsufficientCapacity`
 * @throws {SwarmError} `InvalidInput` for a bad option
 * @example
 * const swarm = createSwarm(profiles, swarmConfig(12, 2));
 * swarm.route({ tokens: 512 });
 */
export function createSwarm(profiles: readonly NodeProfile[], config: SwarmConfig, options: SwarmOptions = {}): Swarm {
  return new Swarm(profiles, config, options);
}

/**
 * A config with one base model, `base`, of `layers` layers in `pipelines` copies.
 * @example createSwarm(profiles, swarmConfig(12, 2))
 */
export function swarmConfig(layers: number, pipelines = 1): SwarmConfig {
  const model: ModelSpec = { id: 'base', layers, pipelines, kind: 'base' };
  return { models: [model] };
}
