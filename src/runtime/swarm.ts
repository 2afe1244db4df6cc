import { createActor, type Actor, type SnapshotFrom } from 'xstate';
import { badSampleField, sampleProblem } from '../../machines/node.machine.js';
import { nodeActorOf, provideSwarm, type RescueIndex, type SwarmEmitted } from '../../machines/swarm.machine.js';
import { checkRouteOptions } from '../core/arguments.js';
import { resolveRequest } from '../core/cost.js';
import { SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import { planSwarm } from '../core/plan.js';
import { routeResolved } from '../core/route.js';
import type { SwarmState } from '../core/state.js';
import { swarmConfigIssue, swarmOptionsIssue } from '../core/swarm-config.js';
import type { IdSource, NodeProfile, NodeTelemetry, Route } from '../core/types.js';
import { baseModelId } from '../core/validate.js';
import { isTimerClock, systemClock } from './clock.js';
import { randomIds } from './ids.js';
import { kInternals, type SwarmInternals, type SwarmOrigin } from './internal.js';
import { LeaseTable } from './lease-table.js';
import { applyCommand, join, retire, revive, runningSnapshot, takeDown, unknownNode } from './lifecycle-commands.js';
import { lifecycleOf } from './node-lifecycle.js';
import { plainProfile, plainSample } from './plain.js';
import type { NodeLifecycle, SwarmContract } from './swarm-contract.js';
import { inspectionHandle, type SwarmActor } from './inspection-handle.js';
import { SwarmView } from './swarm-view.js';
import { NO_PREFIX, swarmPrefixHost, type PrefixHook, type PrefixStats } from './prefix-hook.js';
import { PromptAtLease } from './prompt-at-lease.js';
import { swarmAdmission, type Admission, type AdmitOptions, type Saturation } from './swarm-admission.js';
import { awaitLeased, chooseRoute, unstalledRoute } from './route-choice.js';
import { TelemetryIntake } from './telemetry-intake.js';
import { checkRelease } from './release-check.js';
import { guardedOn } from './guarded-on.js';
import type { Growth, Lease, LeasedRoute, Rebalance, RebalancerHook, ReleaseOutcome, Rescue, Retirement, Revival, RouteOptions, SwarmConfig, SwarmOptions, SwarmRequest, SwarmStatus, TelemetrySample, TimeSource } from './types.js';

type RunningActor = Actor<ReturnType<typeof provideSwarm>>;
type SwarmSnapshot = SnapshotFrom<RunningActor>;
export type { SwarmActor } from './inspection-handle.js';

/**
 * A swarm at run time: a thin façade over the Swarm statechart, which decides every lifecycle
 * step (rescue before mark, growth, retirement, status) and writes every node's lifecycle. The
 * façade sends events and reads snapshots; what `route` reads without an actor message is a view
 * ({@link SwarmView}) that follows the statechart's transitions, plus the leases. Create it with
 * {@link createSwarm}.
 */
export class Swarm implements SwarmContract<'now'> {
  /** The running Swarm actor, read-only (the node actors are in its system). */
  readonly actor: SwarmActor;
  /** The library's own entries reach the internals through this key (`src/runtime/internal.ts`). */
  readonly [kInternals]: SwarmInternals;
  private readonly actorRef: RunningActor;
  private readonly view: SwarmView;
  private readonly prefix: PrefixHook;
  private readonly atLease = new PromptAtLease(); // admission's prompts enter the index once leased
  private readonly leases: LeaseTable;
  private readonly admission: Admission;
  private readonly baseModel: string;
  private readonly allowDegraded: boolean;
  private readonly leaseTtlMs: number;
  private readonly intake: TelemetryIntake;
  private readonly clock: TimeSource;
  private readonly timers: boolean; // whether the clock keeps timers (the actors' clock): heartbeats need it
  /** How many `swarm.on` handlers are running now (a command from one is refused). */
  private readonly handlers = { running: 0 };
  private readonly rebalancer: RebalancerHook | undefined; // docs/rebalance.md

  /**
   * @internal use {@link createSwarm}; `origin` is a persisted swarm checked against these
   * profiles and config (`restoreSwarm` of `hecate-swarm/persistence`), or a replica's policy.
   */
  constructor(profiles: readonly NodeProfile[], config: SwarmConfig, options: SwarmOptions = {}, origin: SwarmOrigin = {}) {
    const issue = swarmConfigIssue(config) ?? swarmOptionsIssue(options);
    if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
    const given = Array.isArray(profiles) ? profiles.map(plainProfile) : profiles;
    const { restored, snapshot } = origin;
    this.allowDegraded = config.allowDegraded ?? true;
    this.leaseTtlMs = config.leaseTtlMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
    this.timers = options.clock === undefined || isTimerClock(options.clock);
    this.leases = new LeaseTable(this.leaseTtlMs, this.clock, (nodeId, delta) => this.view.table.addInflight(nodeId, delta), options.leaseNamespace, (lease) => (this.admission.ended(lease), this.rebalancer?.leaseEnded(lease)));
    // Seeded ids live in the context (a snapshot carries them); any other id source is injected.
    const seeded = restored !== undefined ? restored.ids !== null : snapshot !== undefined ? snapshot.seeded : options.idSource === undefined && options.seed !== undefined;
    const ids: IdSource | undefined = seeded ? undefined : (options.idSource ?? randomIds);
    const index: RescueIndex = { best: (m) => this.view.table.best(m), bestWithout: (m, n) => this.view.table.bestWithout(m, n), doubted: () => this.view.table.suspects > 0 };
    const machine = provideSwarm({
      telemetry: () => this.view.table.nodes,
      inflight: () => this.view.table.extra,
      index,
      ...(ids !== undefined ? { ids } : {}),
      defersOwnMarks: origin.defersOwnMarks === true,
    });
    const actorOptions = { ...(options.inspect !== undefined ? { inspect: options.inspect } : {}), ...(isTimerClock(options.clock) ? { clock: options.clock } : {}) };
    if (snapshot !== undefined) {
      this.actorRef = createActor(machine, { snapshot: snapshot.value, ...actorOptions } as never) as RunningActor;
    } else {
      const members = restored?.profiles ?? given;
      const plan = restored?.plan ?? deepFreeze(planSwarm(members, config));
      this.actorRef = createActor(machine, {
        input: {
          plan,
          profiles: members,
          alpha: config.alpha ?? 0.3,
          allowDegraded: this.allowDegraded,
          ...(restored?.ids != null ? { idSeed: restored.ids } : seeded ? { idSeed: options.seed } : {}),
          ...(restored !== undefined ? { restore: restored.restore } : {}),
          ...(config.failureDetector !== undefined ? { failureDetector: config.failureDetector } : {}),
          ...(config.ejection !== undefined ? { ejection: config.ejection } : {}),
        },
        ...actorOptions,
      }) as RunningActor;
    }
    const context = this.actorRef.getSnapshot().context;
    this.baseModel = baseModelId(context.plan.models);
    const down: string[] = [];
    for (const [id, m] of context.members) if (context.alive[m.slot] === 0) down.push(id);
    this.view = new SwarmView(context.plan, [...context.members.values()].map((m) => m.profile), down, config.releaseSampleMs ?? 400, this.leases);
    this.intake = new TelemetryIntake(this.view, this.clock, config.failurePenaltyMs ?? 1000);
    this.view.prefix = this.prefix = options.prefixCache?.attach(swarmPrefixHost(this.view.table, () => this.actorRef.getSnapshot().context, (id) => this.leases.isOpen(id))) ?? NO_PREFIX;
    // Registered first, so the orchestrator's handlers see the view done.
    this.view.follow(this.actorRef);
    // An action that throws stops the statechart with an error (every later call says so, `Stopped`),
    // instead of surfacing as an unhandled error from inside XState.
    this.actorRef.subscribe({ error: () => undefined });
    this.actorRef.start();
    // A snapshot carries the Swarm's data, not its node actors: each starts again with its record.
    if (snapshot !== undefined) for (const id of context.members.keys()) nodeActorOf(this.actorRef, context, id, snapshot.records.get(id));
    this.actor = inspectionHandle(this.actorRef);
    this.rebalancer = options.rebalancer?.attach({ actor: this.actorRef, clock: this.clock, telemetry: () => this.view.table.nodes, runsOn: (model, nodes) => this.leases.runsOn(model, nodes) });
    this.admission = swarmAdmission({ actor: this.actorRef, view: this.view, leases: this.leases, clock: this.clock, route: (r) => this.atLease.choose(() => this.route(r)), lease: (route, request) => this.atLease.leased(route, this.lease(route, resolveRequest(request).tokens), this.prefix) }, config.admission);
    this[kInternals] = {
      running: () => void this.running(),
      genesis: [given, config],
      seeded,
      clock: this.clock,
      actor: this.actorRef,
      reserved: (route) => this.reserved(route),
      learn: (route, request) => this.prefix.learn(route, request, resolveRequest(request).tokens),
      admission: this.admission,
      mintId: () => this.leases.mint(),
      watchDown: (nodeId, onDown) => this.view.downWatchers.watch(nodeId, onDown),
      reads: () => ({ telemetry: this.view.table.nodes, inflight: this.view.table.extra, index }),
      apply: (command) => {
        this.notInHandler('a lifecycle command');
        return applyCommand(this.actorRef, command);
      },
      load: { local: () => this.view.table.localInflight, onLocal: (listener) => void (this.view.table.onLocal = listener), setRemote: (nodeId, count) => this.view.table.setRemoteInflight(nodeId, count) },
    };
  }

  /** The swarm's status: the Swarm statechart's current state. */
  status(): SwarmStatus {
    return this.actorRef.getSnapshot().value as SwarmStatus;
  }

  /** The current plan and telemetry as an immutable {@link SwarmState} (plain data). */
  state(): SwarmState {
    return this.view.table.state(this.actorRef.getSnapshot().context.plan);
  }

  /**
   * A member's lifecycle as the statechart and its node actor hold it: alive, suspect or down
   * (and why), its failures, ejections and probation. Undefined for a stranger.
   * @example swarm.node('gpu')?.state // 'alive'
   */
  node(nodeId: string): NodeLifecycle | undefined {
    return lifecycleOf(this.running().context, nodeId, this.view.ref(nodeId));
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
    if (this.actorRef.getSnapshot().status !== 'active') this.running(); // throws Stopped
    checkRouteOptions(options);
    const r = resolveRequest(request); // before any change: it rejects a malformed request or an unknown key
    if (this.leases.size > 0) this.leases.expire();
    const modelId = request.model ?? this.baseModel; // a string: resolveRequest refused any other `model`
    const prompted = this.prefix.begin(request, modelId, r); // docs/prefix-cache.md
    const choose = () => chooseRoute(this.view, this.actorRef.getSnapshot().context.plan, modelId, r, this.allowDegraded);
    const route = unstalledRoute(this.view, () => this.leases.now().now, () => (prompted ? this.prefix.choose(modelId, r, choose) : choose()));
    if (options?.reserve !== true) return !prompted || this.atLease.defer(route) ? route : this.prefix.finish(route);
    const leased = this.lease(route, r.tokens);
    return prompted ? this.prefix.finish(leased, leased.lease.id) : leased;
  }

  /**
   * A route leased as `route(…, { reserve: true })` would be, once a copy has room; until then it waits in a bounded queue
   * by `priority` (docs/admission.md). Rejects `RoutingError` `Saturated` (`retryAfterMs`), `DeadlineExceeded`, `Aborted`.
   */
  admit(request?: SwarmRequest, options?: AdmitOptions): Promise<LeasedRoute> {
    return this.admission.admit(request, options);
  }

  /** How full the swarm and each copy are, in step with the open reservations, and the queue. @throws {SwarmError} `Stopped` */
  saturation(): Saturation {
    this.running();
    return this.admission.saturation();
  }

  /** A lease on a chosen route; its watched nodes wait for it to come back. */
  private lease(route: Route, tokens = 0): LeasedRoute {
    const leased = this.reserved(route);
    awaitLeased(this.view, leased, this.leases.now().now, this.actorRef.getSnapshot().context.plan, tokens);
    return leased;
  }

  /** The route with a lease on its nodes (each once), counted as in flight. */
  private reserved(route: Route): LeasedRoute {
    const lease = this.leases.reserve(route.modelId, [...new Set(route.stages.map((s) => s.nodeId))]);
    this.admission.track(lease, route);
    return { ...route, lease };
  }

  /** The scan for a request, bypassing the index (for benchmarks and equivalence tests); it sees stalls, and flags them, as route does. */
  routeByScan(request: SwarmRequest = {}): Route {
    this.running();
    const r = resolveRequest(request);
    const modelId = request.model ?? this.baseModel;
    return unstalledRoute(this.view, () => this.leases.now().now, () => routeResolved(modelId, r, this.view.table.view(this.actorRef.getSnapshot().context.plan), this.view.table.extra));
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
    const checked = checkRelease(this.leases, this.leaseTtlMs, lease, outcome, (n) => this.actorRef.getSnapshot().context.members.has(n));
    const held = this.leases.end(checked.id) ?? [];
    this.prefix.released(checked.id, checked.cachedTokens, checked.latencyMs);
    this.intake.released(held, checked, this.leases.now().now);
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
    const ref = this.view.ref(nodeId);
    if (ref === undefined) throw unknownNode(snapshot, nodeId);
    if (!this.timers) {
      throw new SwarmError('InvalidInput', `heartbeat of node "${nodeId}": the swarm's clock has only now(); create the swarm with a clock that also has setTimeout and clearTimeout (systemClock, ManualClock) to detect failures`);
    }
    this.view.watched.add(nodeId);
    ref.send({ type: 'node.heartbeat', at: this.clock.now() }); // a suspect's actor clears itself: the view follows
  }

  /**
   * Listens to what the Swarm statechart emits: `node.suspected` and `node.cleared`, `node.down`
   * (with the rescue, computed before the mark, and the cause: `manual`, `detector` or
   * `ejected`), `node.alive` (with the cause), `node.joined` and `node.left` (with the plan
   * adopted), `node.mark` (an own mark deferred to the owner) and `status.changed`; `'*'` for all
   * (docs/machine.md). Handlers run after the transition, in the order they were added, after the
   * routing view's. Returns a function that removes the handler.
   * @example const off = swarm.on('node.down', (e) => console.log(e.nodeId, e.cause, e.rescue.recoveries)); off();
   */
  on<T extends SwarmEmitted['type'] | '*'>(type: T, handler: (event: T extends '*' ? SwarmEmitted : Extract<SwarmEmitted, { type: T }>) => void): () => void {
    return guardedOn(this.actorRef, type, handler as (event: never) => void, this.handlers);
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
    this.notInHandler('markDown');
    return takeDown(this.actorRef, nodeId, { type: 'node.down', nodeId });
  }

  /**
   * Quarantines a node whose output disagreed with the majority of the copies that re-ran its span
   * (docs/security.md, "Verification"): down with cause `integrity`, rescued like any down node;
   * only `markAlive` brings it back. A node already down: no-op.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   * @example swarm.quarantine('gpu').recoveries;
   */
  quarantine(nodeId: string): Rescue {
    this.notInHandler('quarantine');
    return takeDown(this.actorRef, nodeId, { type: 'node.down', nodeId, cause: 'integrity' });
  }

  /**
   * Marks a node alive again; its EWMAs keep their last values. A node already alive: no-op.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   */
  markAlive(nodeId: string): Revival {
    this.notInHandler('markAlive');
    return revive(this.actorRef, nodeId, 'manual', false);
  }

  /**
   * Adds a node without restart. The statechart's telomerase decides its role: restore a missing
   * copy, add a copy, host an expert, or wait as a spare. Existing intact pipelines are untouched.
   * @throws {SwarmError} `InvalidInput` for a bad profile, `DuplicateNode`, `Stopped`
   */
  addNode(profile: NodeProfile): Growth {
    this.notInHandler('addNode');
    return join(this.actorRef, plainProfile(profile));
  }

  /**
   * Retires a node; the statechart's telomerase relocates its layers to live nodes with room; a
   * copy that cannot be rebuilt is dropped whole and reported.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   */
  removeNode(nodeId: string): Retirement {
    this.notInHandler('removeNode');
    return retire(this.actorRef, nodeId);
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
    const ref = this.view.ref(nodeId);
    if (ref === undefined) throw unknownNode(snapshot, nodeId);
    const plain = plainSample(sample);
    const view = this.view;
    // First: a report from a node the detector took down brings it back (a bad sample is no sign of life).
    if (view.watched.size > 0 && view.watched.has(nodeId) && badSampleField(plain) === undefined) this.intake.seen(ref);
    const current = view.table.nodes[nodeId] as NodeTelemetry;
    if (current.alive) {
      // The node actor's `goodSample` guard decides; a refused sample leaves the entry as it was
      // (ingest compares the actor's snapshots once: no second read here).
      const next = this.intake.ingest(nodeId, plain, ref, current);
      if (next !== current) return next;
    }
    if (badSampleField(plain) !== undefined) throw new SwarmError('BadTelemetry', `telemetry for node "${nodeId}": ${sampleProblem(plain)}; the EWMA is unchanged`);
    return current; // down: its telemetry is stale by definition
  }

  /** The prefix-cache index's counters: prompts routed, tokens estimated and reported cached; all zero without the plug-in (docs/prefix-cache.md). */
  prefixStats(): PrefixStats {
    return this.prefix.stats();
  }

  /** Moves spans where counted-once throughput needs them, make-before-break (docs/rebalance.md). @throws {SwarmError} `InvalidInput`, `Stopped` */
  rebalance(options?: unknown): Rebalance {
    this.notInHandler('rebalance');
    if (this.running() && this.rebalancer !== undefined) return this.rebalancer.rebalance(options);
    throw new SwarmError('InvalidInput', 'this swarm has no rebalancer: createSwarm(profiles, config, { rebalancer: rebalancer() }), rebalancer from hecate-swarm/rebalance');
  }

  /** Stops the swarm and its node actors; every later call but `status`/`state`/`stop` throws `Stopped`. */
  stop(): void {
    this.rebalancer?.stop();
    if (this.actorRef.getSnapshot().status === 'active') this.actorRef.send({ type: 'swarm.stop' });
    this.admission.close();
  }

  /** `InvalidInput` for a lifecycle command called from inside a `swarm.on` handler. */
  private notInHandler(call: string): void {
    if (this.handlers.running > 0) {
      throw new SwarmError('InvalidInput', `${call} called from inside a swarm.on handler: the statechart is still taking the event that handler was told of; call it after the handler returns (e.g. from queueMicrotask)`);
    }
  }

  /** The snapshot, if the statechart is running; else `Stopped`. */
  private running(): SwarmSnapshot {
    return runningSnapshot(this.actorRef);
  }
}
