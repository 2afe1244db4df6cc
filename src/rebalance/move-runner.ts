/**
 * Carries a rebalance out on a running Swarm (docs/rebalance.md "Make-before-break"): decides the
 * moves on the statechart's plan, members and liveness, tells the statechart to begin them
 * (`rebalance.begin`, which refuses an order that does not fit), has each node load its spans
 * (the plug-in's loader, else the modelled time on the swarm's clock), tells it each span loaded,
 * and tells it a copy drained once no request in flight runs through the old copy. The
 * statechart decides every phase; this reads its snapshot and sends events — on a replica, through
 * its log (`RebalanceHost.commit`), where only the replica that decided a move carries it out. The
 * automatic policy runs `rebalance()` on an interval of the swarm's clock.
 */
import type { Actor } from 'xstate';
import { livenessView, type MoveOrder, type PendingMove, type provideSwarm } from '../../machines/swarm.machine.js';
import { SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import { sharedThroughput } from '../core/shared-throughput.js';
import type { NodeProfile, NodeStates, Pipeline, SwarmPlan } from '../core/types.js';
import { isTimerClock } from '../runtime/clock.js';
import type { MoveEvent, PlannedMove, Rebalance, RebalanceDecision, RebalanceHost, RebalancerHook, SpanOrder } from '../runtime/rebalance-hook.js';
import type { Lease } from '../runtime/types.js';
import { spanLoads } from './move-cost.js';

type SwarmActorRef = Actor<ReturnType<typeof provideSwarm>>;

/** What a loader may tell of a span it loaded: how long reading it took (measured), in seconds. */
export interface LoadReport {
  readonly seconds?: number;
}

/** How the runner decides and loads: the plug-in's options. */
export interface RunnerPolicy {
  decide(plan: SwarmPlan, profiles: readonly NodeProfile[], nodes: NodeStates, options?: unknown): RebalanceDecision;
  readonly everyMs?: number;
  /** Loads a span; may resolve with the measured time, which then prices that node's later loads. */
  readonly load?: (span: SpanOrder) => Promise<void | LoadReport>;
  /** The load bandwidth of a node that declares none (GB/s): prices the spans of a move adopted from a save. */
  readonly loadGbPerSecond: number;
}

/** The statechart's order for a decided move. */
export function moveOrder(m: PlannedMove & { id: string }, plan: readonly Pipeline[]): MoveOrder {
  const byId = new Map(plan.map((p) => [p.id, p] as const));
  return { id: m.id, modelId: m.modelId, removes: m.removes.map((r) => byId.get(r) as Pipeline), adds: m.adds, loading: [...new Set(m.loads.map((l) => l.nodeId))], breakFirst: m.dropsFirst.length > 0 };
}

/** How often a replica looks again at a move draining while another replica still runs requests on its old copies. */
const RECHECK_MS = 500;

export class MoveRunner implements RebalancerHook {
  /** The spans of each move this runner carries out, by move id (scheduled when its phase is loading). */
  private readonly loads = new Map<string, readonly SpanOrder[]>();
  private readonly scheduled = new Set<string>();
  /** Moves seen pending in the statechart: a move gone from it is forgotten (one not begun yet is not). */
  private readonly seen = new Set<string>();
  /** Moves whose drain was told (through a log: told once). */
  private readonly drained = new Set<string>();
  /** Load bandwidth measured per node (GB/s): the loader's reports. */
  private readonly measured = new Map<string, number>();
  private readonly actor: SwarmActorRef;
  private seq = 0;
  private auto: unknown;
  private recheck: unknown;
  private stopped = false;
  private advancing = false;

  constructor(
    private readonly host: RebalanceHost,
    private readonly policy: RunnerPolicy,
  ) {
    this.actor = host.actor as SwarmActorRef;
    if (host.commit !== undefined) {
      // On a replica the statechart changes when the log says: look again after each change.
      this.actor.subscribe({ next: () => this.advance(), error: () => undefined });
    } else {
      this.adopt();
    }
    this.startAuto();
  }

  /** `swarm.rebalance(options)`: decides and begins; a rebalance under way decides nothing and names its moves. */
  rebalance(options?: unknown): Rebalance {
    const context = this.actor.getSnapshot().context;
    const profiles = [...context.members.values()].map((m) => this.withMeasured(m.profile));
    if (context.moves !== undefined && context.moves.size > 0) {
      const now = sharedThroughput(context.plan, profiles);
      return deepFreeze({ moves: [], layersMoved: 0, before: now.layerRate, after: now.layerRate, bound: now.bound, underWay: [...context.moves.keys()] });
    }
    const decision = this.policy.decide(context.plan, profiles, livenessView(context, this.host.telemetry()), options);
    const moves = decision.moves.map((m) => {
      const id = `${this.host.movePrefix ?? 'move-'}${++this.seq}`;
      this.loads.set(id, m.loads.map((l) => ({ ...l, moveId: id })));
      return { ...m, id };
    });
    if (moves.length > 0) {
      const event: MoveEvent = { type: 'rebalance.begin', moves: moves.map((m) => moveOrder(m, context.plan.pipelines)) };
      if (this.host.commit !== undefined) {
        // Applied when it comes back from the log (or refused there, alike on every replica).
        this.host.commit(event).catch(() => moves.forEach((m) => this.forget(m.id)));
      } else {
        const before = this.actor.getSnapshot();
        this.actor.send(event);
        if (this.actor.getSnapshot() === before) {
          moves.forEach((m) => this.forget(m.id));
          throw new SwarmError('InvalidInput', 'the swarm refused the rebalance: its moves do not fit the plan');
        }
        this.advance();
      }
    }
    return deepFreeze({ ...decision, moves, underWay: [] });
  }

  /** Moves every pending move this runner carries on: schedules a loading move's loads, tells a draining one drained once nothing runs on it. */
  advance(): void {
    if (this.advancing || this.stopped) return;
    this.advancing = true;
    try {
      for (let step = 0; step < 10_000; step++) if (!this.step()) return;
    } finally {
      this.advancing = false;
    }
  }

  /** One look at the pending moves; true when it told the statechart something (look again). */
  private step(): boolean {
    const snapshot = this.actor.getSnapshot();
    if (snapshot.status !== 'active') return false;
    const moves = snapshot.context.moves;
    for (const id of moves?.keys() ?? []) this.seen.add(id);
    for (const id of [...this.loads.keys()]) if (this.seen.has(id) && moves?.has(id) !== true) this.forget(id);
    if (moves === undefined) return false;
    let blocked = false;
    for (const [id, m] of moves) {
      if (!this.loads.has(id)) continue; // another replica's move: it carries it out
      if (m.phase === 'loading' && !this.scheduled.has(id)) {
        this.scheduled.add(id);
        this.schedule(id, m);
        return true;
      }
      if (m.phase === 'draining' && !this.drained.has(id)) {
        if (this.host.runsOn(m.order.modelId, oldNodes(m))) {
          blocked = true;
          continue;
        }
        if (this.host.commit !== undefined) this.drained.add(id);
        this.tell({ type: 'copy.drained', moveId: id });
        return this.host.commit === undefined;
      }
    }
    // Through a log, another replica's requests in flight end without a lease here: look again later.
    if (blocked && this.host.commit !== undefined) this.lookAgain();
    return false;
  }

  /** A lease ended: a draining move of its model may be done. */
  leaseEnded(lease: Lease): void {
    const moves = this.actor.getSnapshot().context.moves;
    for (const m of moves?.values() ?? []) if (m.phase === 'draining' && m.order.modelId === lease.modelId) return this.advance();
  }

  /** Stops the automatic policy and forgets every pending load. */
  stop(): void {
    this.stopped = true;
    const clock = this.host.clock;
    if (isTimerClock(clock)) {
      if (this.auto !== undefined) clock.clearTimeout(this.auto);
      if (this.recheck !== undefined) clock.clearTimeout(this.recheck);
    }
    this.auto = this.recheck = undefined;
    this.loads.clear();
    this.scheduled.clear();
  }

  /** The automatic policy: `rebalance()` every `everyMs` on a clock with timers, while healthy and idle. */
  private startAuto(): void {
    const everyMs = this.policy.everyMs;
    const clock = this.host.clock;
    if (everyMs === undefined || !isTimerClock(clock)) return;
    const tick = () => {
      this.auto = clock.setTimeout(tick, everyMs);
      const snapshot = this.actor.getSnapshot();
      if (snapshot.status === 'active' && snapshot.value === 'healthy') this.rebalance();
    };
    this.auto = clock.setTimeout(tick, everyMs);
  }

  /** A move event: to the statechart now, or (a replica) onto the log. */
  private tell(event: MoveEvent): void {
    if (this.host.commit === undefined) this.actor.send(event);
    else this.host.commit(event).catch(() => undefined); // refused or lost: the move stays as the log has it
  }

  private lookAgain(): void {
    const clock = this.host.clock;
    if (this.recheck !== undefined || !isTimerClock(clock)) return;
    this.recheck = clock.setTimeout(() => {
      this.recheck = undefined;
      this.advance();
    }, RECHECK_MS);
  }

  private forget(id: string): void {
    this.loads.delete(id);
    this.scheduled.delete(id);
    this.seen.delete(id);
    this.drained.delete(id);
  }

  /** The profile with the load bandwidth measured on it, if any. */
  private withMeasured(profile: NodeProfile): NodeProfile {
    const gbps = this.measured.get(profile.id);
    return gbps === undefined ? profile : { ...profile, loadGbPerSecond: gbps };
  }

  /**
   * Moves pending in a swarm restored from a save (docs/persistence.md) have no runner yet: this
   * one carries them on, each loading node loading the spans of its new stages again (loading is
   * idempotent).
   */
  private adopt(): void {
    const context = this.actor.getSnapshot().context;
    const profiles = new Map([...context.members.values()].map((m) => [m.profile.id, m.profile] as const));
    for (const [id, m] of context.moves ?? []) {
      const model = context.plan.models.find((x) => x.id === m.order.modelId);
      if (model === undefined) continue;
      this.loads.set(id, spanLoads(model, m.order.removes, m.order.adds, profiles, this.policy.loadGbPerSecond).map((l) => ({ ...l, moveId: id })));
    }
    if (this.loads.size > 0) this.advance();
  }

  /** Each node loads its spans one after another; each node's last one tells the statechart. */
  private schedule(moveId: string, m: PendingMove): void {
    const spans = this.loads.get(moveId) ?? [];
    for (const nodeId of m.waiting) {
      const mine = spans.filter((s) => s.nodeId === nodeId);
      const loaded = () => {
        if (this.stopped || this.actor.getSnapshot().status !== 'active') return;
        this.tell({ type: 'span.loaded', moveId, nodeId });
        if (this.host.commit === undefined) this.advance();
      };
      const load = this.policy.load;
      const clock = this.host.clock;
      if (load !== undefined) {
        const one = (span: SpanOrder) => load(span).then((report) => this.record(span, report));
        // A loader that fails aborts the move: the old copies serve on (a break-first move's left the plan already).
        const failed = (error: unknown) => {
          if (this.stopped || this.actor.getSnapshot().status !== 'active') return;
          this.tell({ type: 'span.failed', moveId, nodeId, reason: error instanceof Error ? error.message : String(error) });
        };
        void mine.reduce((chain, span) => chain.then(() => one(span)), Promise.resolve()).then(loaded, failed);
      } else if (isTimerClock(clock)) clock.setTimeout(loaded, Math.ceil(mine.reduce((s, x) => s + x.seconds, 0) * 1000));
      else loaded();
    }
  }

  /** A loader's measured time for a span: the node's bandwidth for the next decision. */
  private record(span: SpanOrder, report: void | LoadReport): void {
    const seconds = report?.seconds;
    if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 && span.gb > 0) this.measured.set(span.nodeId, span.gb / seconds);
  }
}

function oldNodes(m: PendingMove): ReadonlySet<string> {
  const out = new Set<string>();
  for (const p of m.order.removes) for (const s of p.stages) out.add(s.nodeId);
  return out;
}
