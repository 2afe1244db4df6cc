import { createActor, type Actor } from 'xstate';
import type { SwarmEmitted } from '../../machines/swarm.machine.js';
import { ejectionOptionsIssue } from '../core/ejection.js';
import { phiOptionsIssue } from '../core/phi.js';
import { badSampleField, sampleProblem, type NodeContext } from '../../machines/node.machine.js';
import { swarmMachine, type NodeActorRef } from '../../machines/swarm.machine.js';
import { resolveRequest, tokensCost } from '../core/cost.js';
import { PlanError, RoutingError, SwarmError } from '../core/errors.js';
import { planSwarm } from '../core/plan.js';
import { routeResolved } from '../core/route.js';
import { serveModel } from '../core/serve.js';
import { declaredTelemetry, SwarmState } from '../core/state.js';
import type { ModelSpec, NodeProfile, NodeTelemetry, Route, Stage, SwarmPlan } from '../core/types.js';
import { baseModelId, profileIssues, validatePlan } from '../core/validate.js';
import { systemClock } from './clock.js';
import { randomIds, seededIds } from './ids.js';
import { inflightLoad } from './inflight.js';
import { RouterIndex } from './router-index.js';
import { openSession, type Session } from './session.js';
import { timerClock } from './session-options.js';
import type { SessionHost, SessionOptions, StageRunner } from './session-types.js';
import { planGrowth, planRetirement } from './telomerase.js';
import type {
  Clock,
  Growth,
  IdSource,
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

/** Released latencies of one node waiting to be fed as one sample. */
interface ReleaseWindow {
  fedAt: number;
  sum: number;
  count: number;
}

interface LeaseRecord {
  readonly lease: Lease;
  released: boolean;
  /** The lease's nodes still in the swarm: a removed node leaves every lease, so one added back under its id starts clean. */
  held: readonly string[];
}

/** Freezes plain data deeply, so the runtime can hand out plan objects without copying. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * A swarm at run time: the Swarm statechart and one actor per node, wired to the pure core.
 * `route` reads the current plan and telemetry and never passes through actor messages;
 * everything else is an event of the statechart. Create it with {@link createSwarm}.
 */
export class Swarm {
  /** The running Swarm actor (its children are the node actors). */
  readonly actor: SwarmActor;
  private plan: SwarmPlan;
  private readonly profiles = new Map<string, NodeProfile>();
  /** The live telemetry table, kept in step with the node actors. Entries are replaced, never mutated. */
  private readonly telemetry: Record<string, NodeTelemetry> = {};
  /** Extra load per node from in-flight reservations. */
  private readonly inflight: Record<string, number> = {};
  private readonly inflightCount = new Map<string, number>();
  private readonly leases = new Map<string, LeaseRecord>();
  private index: RouterIndex;
  private readonly wanted: Map<string, number>;
  private readonly baseModel: string;
  private readonly allowDegraded: boolean;
  private readonly leaseTtlMs: number;
  private readonly failurePenaltyMs: number;
  private readonly releaseSampleMs: number;
  /** Per node: released latencies not yet fed, and when a release sample was last fed. Plain data. */
  private readonly releaseWindows = new Map<string, ReleaseWindow>();
  private readonly clock: TimeSource;
  private readonly ids: IdSource;
  private leaseSeq = 0;
  /** Whether the clock keeps timers (it is the actors' clock); heartbeats need it. */
  private readonly timers: boolean;
  /** Nodes whose failure detection has started (at their first heartbeat). */
  private readonly watched = new Set<string>();
  /** Mirrors the statechart's final state, read on every call (cheaper than a snapshot). */
  private stopped = false;
  private snapshot: SwarmState | undefined;

  /** @internal use {@link createSwarm} */
  constructor(profiles: readonly NodeProfile[], config: SwarmConfig, options: SwarmOptions = {}) {
    const issue = configIssue(config) ?? optionsIssue(options);
    if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
    this.plan = deepFreeze(planSwarm(profiles, config));
    for (const p of profiles) {
      this.profiles.set(p.id, deepFreeze({ ...p }));
      this.telemetry[p.id] = Object.freeze(declaredTelemetry(p));
    }
    this.wanted = new Map(config.models.map((m) => [m.id, m.pipelines ?? 1]));
    this.baseModel = baseModelId(this.plan.models);
    this.allowDegraded = config.allowDegraded ?? true;
    this.leaseTtlMs = config.leaseTtlMs ?? 30_000;
    this.failurePenaltyMs = config.failurePenaltyMs ?? 1000;
    this.releaseSampleMs = config.releaseSampleMs ?? 400;
    this.clock = options.clock ?? systemClock;
    this.ids = options.idSource ?? (options.seed !== undefined ? seededIds(options.seed) : randomIds);
    this.index = new RouterIndex(this.plan, this.telemetry, this.inflight);
    this.actor = createActor(swarmMachine, {
      input: {
        plan: this.plan,
        profiles: [...this.profiles.values()],
        alpha: config.alpha ?? 0.3,
        allowDegraded: this.allowDegraded,
        telemetry: this.telemetry,
        inflight: this.inflight,
        // Through `this`: the index is rebuilt whenever the plan changes.
        index: { best: (m) => this.index.best(m), bestWithout: (m, n) => this.index.bestWithout(m, n) },
        ...(config.failureDetector !== undefined ? { failureDetector: config.failureDetector } : {}),
        ...(config.ejection !== undefined ? { ejection: config.ejection } : {}),
      },
      ...(options.inspect !== undefined ? { inspect: options.inspect } : {}),
      ...(isTimerClock(options.clock) ? { clock: options.clock } : {}),
    });
    this.timers = options.clock === undefined || isTimerClock(options.clock);
    // The machine marks nodes down and alive on its own too (detector, ejection, bans): the live
    // table follows what it emits. Registered first, so the orchestrator's handlers see it done.
    this.actor.on('node.down', (e) => {
      this.setAlive(e.nodeId, false);
      this.releaseWindows.delete(e.nodeId); // what it served before dying says nothing of it when back
    });
    this.actor.on('node.alive', (e) => this.setAlive(e.nodeId, true));
    this.actor.start();
  }

  /** The swarm's status: the Swarm statechart's current state. */
  status(): SwarmStatus {
    return this.actor.getSnapshot().value as SwarmStatus;
  }

  /** The current plan and telemetry as an immutable {@link SwarmState} (plain data). */
  state(): SwarmState {
    this.snapshot ??= SwarmState.from({ plan: this.plan, nodes: this.telemetry });
    return this.snapshot;
  }

  /**
   * Routes one request (docs/design.md §4, §7): the cheapest intact copy of the model (the base model unless
   * `request.model` names another); when none is left, the best recovery — a splice, else the
   * degraded survivors. With `{ reserve: true }` the route carries a lease and counts as in flight
   * on its nodes until released or expired.
   * @throws {RoutingError} `UnknownModel`, `NoHealthyPipeline`, `InvalidRequest`
   * @example const route = swarm.route({ tokens: 512 });
   */
  route(request?: SwarmRequest): Route;
  route(request: SwarmRequest | undefined, options: RouteOptions & { reserve: true }): LeasedRoute;
  route(request?: SwarmRequest, options?: RouteOptions): Route | LeasedRoute;
  route(request: SwarmRequest = {}, options: RouteOptions = {}): Route | LeasedRoute {
    this.assertRunning();
    if (this.leases.size > 0) this.expireLeases();
    const r = resolveRequest(request); // first: it rejects a null or malformed request
    const modelId = request.model ?? this.baseModel;
    if (typeof modelId !== 'string') throw new RoutingError('InvalidRequest', `request field "model" must be a model id string, got ${String(modelId)}`);
    let route: Route;
    const best = r.isDefault ? this.index.best(modelId) : undefined;
    if (best !== undefined) {
      const p = best.pipeline;
      route = { modelId, pipelineId: p.id, stages: p.stages, cost: best.chain + tokensCost(r.tokens, r.weights), hops: p.stages.length - 1, degraded: false };
    } else {
      route = serveModel(modelId, r, { plan: this.plan, nodes: this.telemetry }, { allowDegraded: this.allowDegraded, extra: this.inflight });
    }
    if (options.reserve !== true) return route;
    return { ...route, lease: this.reserve(route) };
  }

  /** The pure scan for a request, bypassing the index (for benchmarks and equivalence tests). */
  routeByScan(request: SwarmRequest = {}): Route {
    this.assertRunning();
    return routeResolved(request.model ?? this.baseModel, resolveRequest(request), { plan: this.plan, nodes: this.telemetry }, this.inflight);
  }

  /**
   * Ends a reservation: its nodes stop counting it, and an observed latency feeds their EWMA
   * (split over the route's nodes in proportion to their current latency estimates).
   * @throws {SwarmError} `UnknownLease` for a lease never issued, already released or expired.
   */
  release(lease: Lease | string, outcome: ReleaseOutcome = {}): void {
    this.assertRunning();
    if (this.leases.size > 0) this.expireLeases(); // an expired lease is gone even if nothing swept it yet
    const id = typeof lease === 'string' ? lease : lease?.id;
    const record = id === undefined ? undefined : this.leases.get(id);
    if (record === undefined || record.released) {
      throw new SwarmError('UnknownLease', `unknown lease "${String(id)}": never issued, already released, or expired after ${this.leaseTtlMs} ms`);
    }
    if (outcome === null || typeof outcome !== 'object') throw new SwarmError('BadTelemetry', `release of lease "${id}": the outcome must be an object { latencyMs?, ok? }`);
    if (outcome.latencyMs !== undefined && !(typeof outcome.latencyMs === 'number' && Number.isFinite(outcome.latencyMs) && outcome.latencyMs >= 0)) {
      throw new SwarmError('BadTelemetry', `release of lease "${id}": "latencyMs" must be a finite number >= 0, got ${String(outcome.latencyMs)}`);
    }
    if (outcome.failedNode !== undefined && !record.lease.nodes.includes(outcome.failedNode)) {
      throw new SwarmError('BadTelemetry', `release of lease "${id}": "failedNode" must be one of the lease's nodes (${record.lease.nodes.join(', ')}), got ${String(outcome.failedNode)}`);
    }
    this.endLease(record);
    this.feedOutcome(record.held, outcome);
    const live = record.held.filter((n) => this.telemetry[n]?.alive === true);
    if (outcome.ok === false) {
      // A failure is a signal too: otherwise a fail-fast node looks idle, hence cheapest, until
      // the monitor marks it down. Which node failed is unknown, so every node of the route pays.
      const penalty = Math.max(outcome.latencyMs ?? 0, this.failurePenaltyMs);
      for (const n of live) this.ingest(n, { latencyMs: penalty });
    } else if (outcome.latencyMs !== undefined) {
      const estimates = live.map((n) => this.telemetry[n]?.latencyMs ?? 0);
      const total = estimates.reduce((s, x) => s + x, 0);
      live.forEach((n, i) => {
        const share = total > 0 ? (estimates[i] ?? 0) / total : 1 / live.length;
        this.releaseSample(n, (outcome.latencyMs as number) * share);
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
    this.requireMember(nodeId);
    if (!this.timers) {
      throw new SwarmError('InvalidInput', `heartbeat of node "${nodeId}": the swarm's clock has only now(); create the swarm with a clock that also has setTimeout and clearTimeout (systemClock, ManualClock) to detect failures`);
    }
    this.watched.add(nodeId);
    this.nodeRef(nodeId)?.send({ type: 'node.heartbeat', at: this.clock.now() });
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

  /** In-flight reservations not yet released or expired. */
  inFlight(): number {
    if (this.leases.size > 0) this.expireLeases();
    return this.leases.size;
  }

  /**
   * Marks a node down. First computes the rescue — the failover of every model whose served
   * route uses the node, from the state before the mark — then marks it, then re-derives the
   * status (the order is the statechart's `node.down` transition). A node already down: no-op.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   * @example const rescue = swarm.markDown('gpu'); rescue.recoveries[0]?.route;
   */
  markDown(nodeId: string): Rescue {
    this.requireMember(nodeId);
    if (this.telemetry[nodeId]?.alive !== true) {
      this.actor.send({ type: 'node.down', nodeId }); // down already (detector, ejection): the manual mark wins
      return { nodeId, status: this.status(), recoveries: [], unrecoverable: [] };
    }
    this.actor.send({ type: 'node.down', nodeId });
    const rescue = this.actor.getSnapshot().context.rescue;
    return { nodeId, status: this.status(), recoveries: rescue?.recoveries ?? [], unrecoverable: rescue?.unrecoverable ?? [] };
  }

  /**
   * Marks a node alive again; its EWMAs keep their last values. A node already alive: no-op.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   */
  markAlive(nodeId: string): Revival {
    this.requireMember(nodeId);
    if (this.telemetry[nodeId]?.alive !== true) this.actor.send({ type: 'node.alive', nodeId });
    return { nodeId, status: this.status() };
  }

  /**
   * Adds a node without restart. The telomerase decides its role: restore a missing copy, add a
   * copy, host an expert, or wait as a spare. Existing intact pipelines are untouched.
   * @throws {SwarmError} `InvalidInput` for a bad profile, `DuplicateNode`, `Stopped`
   */
  addNode(profile: NodeProfile): Growth {
    this.assertRunning();
    const issues = profileIssues([profile]);
    if (issues.length > 0) throw new SwarmError('InvalidInput', `cannot add node: ${issues.map((i) => i.message).join('; ')}`);
    if (this.profiles.has(profile.id)) throw new SwarmError('DuplicateNode', `node "${profile.id}" is already in the swarm; remove it first or use another id`);
    const frozen = deepFreeze({ ...profile });
    const profiles = [...this.profiles.values(), frozen];
    const nodes = { ...this.telemetry, [profile.id]: declaredTelemetry(profile) };
    const decision = planGrowth(this.plan, profiles, nodes, frozen, this.wanted, this.ids);
    this.assertPlan(decision.plan, profiles);
    this.profiles.set(profile.id, frozen);
    this.telemetry[profile.id] = Object.freeze(declaredTelemetry(profile));
    this.adopt(decision.plan);
    this.actor.send({ type: 'node.added', profile: frozen, plan: this.plan });
    return { nodeId: profile.id, role: decision.role, ...(decision.modelId !== undefined ? { modelId: decision.modelId } : {}), pipelines: decision.pipelines, replaced: decision.replaced, status: this.status() };
  }

  /**
   * Retires a node and relocates its layers to live nodes with room; a copy that cannot be
   * rebuilt is dropped whole and reported.
   * @throws {SwarmError} `UnknownNode`, `Stopped`
   */
  removeNode(nodeId: string): Retirement {
    this.requireMember(nodeId);
    const decision = planRetirement(this.plan, [...this.profiles.values()], this.telemetry, nodeId);
    const remaining = [...this.profiles.values()].filter((p) => p.id !== nodeId);
    this.assertPlan(decision.plan, remaining);
    this.actor.send({ type: 'node.removed', nodeId, plan: deepFreeze(decision.plan) });
    this.profiles.delete(nodeId);
    delete this.telemetry[nodeId];
    this.releaseWindows.delete(nodeId);
    this.watched.delete(nodeId);
    this.inflightCount.delete(nodeId);
    delete this.inflight[nodeId];
    for (const record of this.leases.values()) {
      if (record.held.includes(nodeId)) record.held = record.held.filter((n) => n !== nodeId);
    }
    this.adopt(decision.plan);
    return { nodeId, relocated: decision.relocated, dropped: decision.dropped, status: this.status() };
  }

  /**
   * Feeds one telemetry sample into a node's EWMA (its actor). NaN, infinite or negative values,
   * unknown keys and a sample with none of `load`, `latencyMs`, `score` are refused and leave
   * the EWMA untouched. Telemetry for a down node is stale and ignored.
   * Returns the node's telemetry after the sample (read-only: it is the live table's entry).
   * @throws {SwarmError} `BadTelemetry`, `UnknownNode`, `Stopped`
   * @example swarm.report('gpu', { load: 0.7, latencyMs: 9 });
   */
  report(nodeId: string, sample: TelemetrySample): NodeTelemetry {
    this.requireMember(nodeId);
    if (badSampleField(sample) !== undefined) throw new SwarmError('BadTelemetry', `telemetry for node "${nodeId}": ${sampleProblem(sample)}; the EWMA is unchanged`);
    if (this.watched.has(nodeId)) this.seen(nodeId); // first: a report from a node the detector took down brings it back
    return this.ingest(nodeId, sample);
  }

  /** Stops the swarm and its node actors; every later call but `status`/`state`/`stop` throws `Stopped`. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.actor.send({ type: 'swarm.stop' });
  }

  /**
   * Feeds one released latency, windowed per node. Within `releaseSampleMs` of the last feed it is
   * held; the first release after that closes the window and is fed with what was held, as their
   * mean. After a quiet gap (more than a whole window with nothing released) what was held is fed
   * on its own first and the new release alone, so an old sample never masks a fresh one. A clock
   * that stepped back (the default is the wall clock) ends the window rather than freezing it.
   */
  private releaseSample(nodeId: string, latencyMs: number): void {
    const now = this.clock.now();
    const windowMs = this.releaseSampleMs;
    const w = this.releaseWindows.get(nodeId);
    if (w === undefined || windowMs === 0) {
      if (windowMs > 0) this.releaseWindows.set(nodeId, { fedAt: now, sum: 0, count: 0 });
      this.ingest(nodeId, { latencyMs });
      return;
    }
    const elapsed = now - w.fedAt;
    if (elapsed >= 0 && elapsed < windowMs) {
      w.sum += latencyMs;
      w.count++;
      return;
    }
    const { sum, count } = w;
    w.fedAt = now;
    w.sum = 0;
    w.count = 0;
    if (count > 0 && (elapsed < 0 || elapsed >= 2 * windowMs)) {
      this.ingest(nodeId, { latencyMs: sum / count }); // held across a quiet gap: on its own
      this.ingest(nodeId, { latencyMs });
    } else {
      this.ingest(nodeId, { latencyMs: (sum + latencyMs) / (count + 1) });
    }
  }

  /** The one narrow intake of telemetry: into the node actor, then the table and the index. */
  private ingest(nodeId: string, sample: TelemetrySample): NodeTelemetry {
    const ref = this.actor.getSnapshot().context.nodes[nodeId] as NodeActorRef | undefined;
    const current = this.telemetry[nodeId] as NodeTelemetry;
    if (ref === undefined || !current.alive) return current;
    ref.send({ type: 'node.telemetry', sample });
    const next = fromNodeContext(ref.getSnapshot().context, current.alive);
    this.telemetry[nodeId] = next;
    // A reservation costs the node's latency estimate: re-price its in-flight load before the index reads it.
    const count = this.inflightCount.get(nodeId);
    if (count !== undefined) this.inflight[nodeId] = inflightLoad(count, next);
    this.changed(nodeId);
    return next;
  }

  private nodeRef(nodeId: string): NodeActorRef | undefined {
    return this.actor.getSnapshot().context.nodes[nodeId];
  }

  /** A proof of life of a watched node: restarts its detector's wait, brings it back from a detector down. */
  private seen(nodeId: string): void {
    this.nodeRef(nodeId)?.send({ type: 'node.seen', at: this.clock.now() });
  }

  /**
   * A released request's outcome, to its nodes' actors: a failure counts towards ejection (on the
   * named node, else on every node of the route); a success is a proof of life and clears the
   * failure count (sent only where there is one to clear, as releases are frequent).
   */
  private feedOutcome(held: readonly string[], outcome: ReleaseOutcome): void {
    if (outcome.ok === false) {
      for (const n of outcome.failedNode !== undefined ? [outcome.failedNode] : held) {
        if (held.includes(n)) this.nodeRef(n)?.send({ type: 'node.outcome', ok: false });
      }
      return;
    }
    for (const n of held) {
      if (this.watched.has(n)) this.seen(n);
      const ref = this.nodeRef(n);
      const ctx = ref?.getSnapshot().context;
      if (ctx !== undefined && (ctx.failures > 0 || ctx.probation)) ref?.send({ type: 'node.outcome', ok: true });
    }
  }

  private setAlive(nodeId: string, alive: boolean): void {
    const current = this.telemetry[nodeId];
    if (current === undefined) return;
    this.telemetry[nodeId] = Object.freeze({ ...current, alive });
    this.changed(nodeId);
  }

  private changed(nodeId: string): void {
    this.snapshot = undefined;
    this.index.nodeChanged(nodeId);
  }

  private adopt(plan: SwarmPlan): void {
    this.plan = deepFreeze(plan);
    this.snapshot = undefined;
    this.index = new RouterIndex(this.plan, this.telemetry, this.inflight);
  }

  private reserve(route: Route): Lease {
    const id = `lease-${++this.leaseSeq}`;
    const nodes = [...new Set(route.stages.map((s: Stage) => s.nodeId))];
    const lease: Lease = Object.freeze({ id, modelId: route.modelId, nodes: Object.freeze(nodes), expiresAt: this.clock.now() + this.leaseTtlMs });
    this.leases.set(id, { lease, released: false, held: nodes });
    for (const n of nodes) this.bumpInflight(n, +1);
    return lease;
  }

  private endLease(record: LeaseRecord): void {
    record.released = true;
    this.leases.delete(record.lease.id);
    for (const n of record.held) this.bumpInflight(n, -1);
  }

  /** Leases share one TTL, so they expire in issue order: pop from the front. */
  private expireLeases(): void {
    const now = this.clock.now();
    for (const record of this.leases.values()) {
      if (record.lease.expiresAt > now) break;
      this.endLease(record);
    }
  }

  private bumpInflight(nodeId: string, delta: number): void {
    const count = Math.max((this.inflightCount.get(nodeId) ?? 0) + delta, 0);
    if (count === 0) {
      this.inflightCount.delete(nodeId);
      delete this.inflight[nodeId];
    } else {
      this.inflightCount.set(nodeId, count);
      this.inflight[nodeId] = inflightLoad(count, this.telemetry[nodeId]);
    }
    if (this.telemetry[nodeId] !== undefined) this.index.nodeChanged(nodeId);
  }

  private assertPlan(plan: SwarmPlan, profiles: readonly NodeProfile[]): void {
    const issues = validatePlan(plan, profiles);
    if (issues.length > 0) throw new PlanError('InvalidPlan', `refused a plan change that would not validate: ${issues.map((i) => i.message).join('; ')}`);
  }

  private assertRunning(): void {
    if (this.stopped) throw new SwarmError('Stopped', 'the swarm is stopped; create a new one with createSwarm()');
  }

  private requireMember(nodeId: string): void {
    this.assertRunning();
    if (typeof nodeId !== 'string' || !this.profiles.has(nodeId)) {
      const known = [...this.profiles.keys()];
      const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, … (${known.length} nodes)` : known.join(', ');
      throw new SwarmError('UnknownNode', `unknown node "${String(nodeId)}": the swarm has ${list || 'no node'}`);
    }
  }

  /**
   * Opens a session: a generation run step by step on a reserved route, resuming from the failed
   * stage when a node fails (docs/sessions.md).
   * @throws {RoutingError} when the model has nothing to serve with
   * @example
   * const session = swarm.session({ tokens: 512 }, (stage, x, { signal, replay }) => callNode(stage, x, replay, signal));
   * const y = await session.step(x); session.close();
   */
  session<T>(request: SwarmRequest, runStage: StageRunner<T>, options?: SessionOptions): Session<T> {
    this.assertRunning();
    const host: SessionHost = {
      route: (r, o) => this.route(r, o),
      reserve: (route) => ({ ...route, lease: this.reserve(route) }),
      release: (lease, outcome) => this.release(lease, outcome),
      state: () => this.state(),
      clock: timerClock(this.clock),
      assertRunning: () => this.assertRunning(),
    };
    return openSession(host, request, runStage, options);
  }

  /** A session of one step: routes, runs every stage once (resuming on a failure), releases. Resolves with the last stage's output. */
  async execute<T>(request: SwarmRequest, input: T, runStage: StageRunner<T>, options?: SessionOptions): Promise<T> {
    const session = this.session(request, runStage, options);
    return session.step(input).finally(() => session.close());
  }
}

/** The telemetry entry of a node actor's context; built field by field, as it runs on every report. */
function fromNodeContext(ctx: NodeContext, alive: boolean): NodeTelemetry {
  // effectiveValues(ctx), inlined: measured EWMAs, else the declared values.
  const t: { -readonly [K in keyof NodeTelemetry]: NodeTelemetry[K] } = { alive, samples: ctx.samples };
  const latencyMs = ctx.latencyMs ?? ctx.declared.latencyMs;
  const score = ctx.score ?? ctx.declared.score;
  if (ctx.load !== undefined) t.load = ctx.load;
  if (latencyMs !== undefined) t.latencyMs = latencyMs;
  if (score !== undefined) t.score = score;
  return t; // not frozen: this runs on every report, entries are replaced (never mutated), and state() freezes its copy
}

/** Whether a clock also keeps timers, so it can be the actors' clock. */
function isTimerClock(clock: Clock | TimeSource | undefined): clock is Clock {
  return clock !== undefined && typeof (clock as Partial<Clock>).setTimeout === 'function' && typeof (clock as Partial<Clock>).clearTimeout === 'function';
}

function optionsIssue(options: SwarmOptions): string | undefined {
  if (options === null || typeof options !== 'object') return 'options must be an object { inspect?, seed?, idSource?, clock? }';
  if (options.clock !== undefined && typeof options.clock?.now !== 'function') return 'option "clock" must have a now() method returning milliseconds';
  if (options.clock !== undefined && ('setTimeout' in options.clock || 'clearTimeout' in options.clock) && !isTimerClock(options.clock)) {
    return 'option "clock" must have both setTimeout(fn, ms) and clearTimeout(handle) methods, or neither';
  }
  if (options.idSource !== undefined && typeof options.idSource !== 'function') return 'option "idSource" must be a function returning a new id';
  if (options.seed !== undefined && !Number.isInteger(options.seed)) return `option "seed" must be an integer, got ${String(options.seed)}`;
  const inspect = options.inspect as unknown;
  if (inspect !== undefined && typeof inspect !== 'function' && (inspect === null || typeof inspect !== 'object')) return 'option "inspect" must be an XState inspection observer (a function or { next })';
  return undefined;
}

function configIssue(config: SwarmConfig): string | undefined {
  if (config === null || typeof config !== 'object') return 'config must be an object { models, ... }';
  // Bad models are left to planSwarm, so they are the same PlanError from both entry points.
  if (config.alpha !== undefined && !(typeof config.alpha === 'number' && config.alpha > 0 && config.alpha <= 1)) return `config "alpha" must be in (0, 1], got ${String(config.alpha)}`;
  if (config.leaseTtlMs !== undefined && !(typeof config.leaseTtlMs === 'number' && config.leaseTtlMs > 0)) return `config "leaseTtlMs" must be a number > 0, got ${String(config.leaseTtlMs)}`;
  if (config.releaseSampleMs !== undefined && !(typeof config.releaseSampleMs === 'number' && Number.isFinite(config.releaseSampleMs) && config.releaseSampleMs >= 0)) return `config "releaseSampleMs" must be a finite number >= 0, got ${String(config.releaseSampleMs)}`;
  if (config.failurePenaltyMs !== undefined && !(typeof config.failurePenaltyMs === 'number' && Number.isFinite(config.failurePenaltyMs) && config.failurePenaltyMs >= 0)) return `config "failurePenaltyMs" must be a finite number >= 0, got ${String(config.failurePenaltyMs)}`;
  if (config.allowDegraded !== undefined && typeof config.allowDegraded !== 'boolean') return `config "allowDegraded" must be a boolean`;
  const detection = phiOptionsIssue(config.failureDetector) ?? ejectionOptionsIssue(config.ejection);
  if (detection !== undefined) return `config ${detection}`;
  return undefined;
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

