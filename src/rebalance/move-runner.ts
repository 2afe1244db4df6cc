/**
 * Carries a rebalance out on a running Swarm (docs/rebalance.md "Make-before-break"): decides the
 * moves on the statechart's plan, members and liveness, tells the statechart to begin them
 * (`rebalance.begin`, which refuses an order that does not fit), has each node load its spans
 * (the plug-in's loader, else the modelled time on the swarm's clock), tells it each span loaded,
 * and tells it a copy drained once no request in flight runs through the old copy. The
 * statechart decides every phase; this reads its snapshot and sends events. The automatic policy
 * runs `rebalance()` on an interval of the swarm's clock.
 */
import type { Actor } from 'xstate';
import { livenessView, type MoveOrder, type PendingMove, type provideSwarm } from '../../machines/swarm.machine.js';
import { SwarmError } from '../core/errors.js';
import { deepFreeze } from '../core/freeze.js';
import { sharedThroughput } from '../core/shared-throughput.js';
import type { NodeProfile, NodeStates, Pipeline, SwarmPlan } from '../core/types.js';
import { isTimerClock } from '../runtime/clock.js';
import type { PlannedMove, Rebalance, RebalanceDecision, RebalanceHost, RebalancerHook, SpanOrder } from '../runtime/rebalance-hook.js';
import type { Lease } from '../runtime/types.js';

type SwarmActorRef = Actor<ReturnType<typeof provideSwarm>>;

/** How the runner decides and loads: the plug-in's options. */
export interface RunnerPolicy {
  decide(plan: SwarmPlan, profiles: readonly NodeProfile[], nodes: NodeStates, options?: unknown): RebalanceDecision;
  readonly everyMs?: number;
  readonly load?: (span: SpanOrder) => Promise<void>;
}

/** The statechart's order for a decided move. */
export function moveOrder(m: PlannedMove & { id: string }, plan: readonly Pipeline[]): MoveOrder {
  const byId = new Map(plan.map((p) => [p.id, p] as const));
  return { id: m.id, modelId: m.modelId, removes: m.removes.map((r) => byId.get(r) as Pipeline), adds: m.adds, loading: [...new Set(m.loads.map((l) => l.nodeId))], breakFirst: m.dropsFirst.length > 0 };
}

export class MoveRunner implements RebalancerHook {
  /** Each pending move's loads, by move id (scheduled when its phase is loading). */
  private readonly loads = new Map<string, readonly SpanOrder[]>();
  private readonly scheduled = new Set<string>();
  private readonly actor: SwarmActorRef;
  private seq = 0;
  private auto: unknown;

  constructor(
    private readonly host: RebalanceHost,
    private readonly policy: RunnerPolicy,
  ) {
    this.actor = host.actor as SwarmActorRef;
    this.startAuto();
  }

  /** `swarm.rebalance(options)`: decides and begins; a rebalance under way decides nothing and names its moves. */
  rebalance(options?: unknown): Rebalance {
    const context = this.actor.getSnapshot().context;
    const profiles = [...context.members.values()].map((m) => m.profile);
    if (context.moves !== undefined && context.moves.size > 0) {
      const now = sharedThroughput(context.plan, profiles);
      return deepFreeze({ moves: [], layersMoved: 0, before: now.layerRate, after: now.layerRate, bound: now.bound, underWay: [...context.moves.keys()] });
    }
    const decision = this.policy.decide(context.plan, profiles, livenessView(context, this.host.telemetry()), options);
    const moves = decision.moves.map((m) => {
      const id = `move-${++this.seq}`;
      this.loads.set(id, m.loads.map((l) => ({ ...l, moveId: id })));
      return { ...m, id };
    });
    if (moves.length > 0) {
      const before = this.actor.getSnapshot();
      this.actor.send({ type: 'rebalance.begin', moves: moves.map((m) => moveOrder(m, context.plan.pipelines)) });
      if (this.actor.getSnapshot() === before) throw new SwarmError('InvalidInput', 'the swarm refused the rebalance: its moves do not fit the plan');
      this.advance();
    }
    return deepFreeze({ ...decision, moves, underWay: [] });
  }

  /** Moves every pending move on: schedules a loading move's loads, tells a draining one drained once nothing runs on it. */
  advance(): void {
    for (let step = 0; step < 10_000; step++) {
      const snapshot = this.actor.getSnapshot();
      if (snapshot.status !== 'active') return;
      const moves = snapshot.context.moves;
      for (const id of [...this.loads.keys()]) if (moves?.has(id) !== true) this.forget(id);
      if (moves === undefined) return;
      let sent = false;
      for (const [id, m] of moves) {
        if (m.phase === 'loading' && !this.scheduled.has(id)) {
          this.scheduled.add(id);
          this.schedule(id, m);
          sent = true;
          break;
        }
        if (m.phase === 'draining' && !this.host.runsOn(m.order.modelId, oldNodes(m))) {
          this.actor.send({ type: 'copy.drained', moveId: id });
          sent = true;
          break;
        }
      }
      if (!sent) return;
    }
  }

  /** A lease ended: a draining move of its model may be done. */
  leaseEnded(lease: Lease): void {
    const moves = this.actor.getSnapshot().context.moves;
    for (const m of moves?.values() ?? []) if (m.phase === 'draining' && m.order.modelId === lease.modelId) return this.advance();
  }

  /** Stops the automatic policy and forgets every pending load. */
  stop(): void {
    if (this.auto !== undefined && isTimerClock(this.host.clock)) this.host.clock.clearTimeout(this.auto);
    this.auto = undefined;
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

  private forget(id: string): void {
    this.loads.delete(id);
    this.scheduled.delete(id);
  }

  /** Each node loads its spans one after another; each node's last one tells the statechart. */
  private schedule(moveId: string, m: PendingMove): void {
    const spans = this.loads.get(moveId) ?? [];
    for (const nodeId of m.waiting) {
      const mine = spans.filter((s) => s.nodeId === nodeId);
      const loaded = () => {
        if (this.actor.getSnapshot().status !== 'active') return;
        this.actor.send({ type: 'span.loaded', moveId, nodeId });
        this.advance();
      };
      const load = this.policy.load;
      const clock = this.host.clock;
      if (load !== undefined) void mine.reduce((chain, span) => chain.then(() => load(span)), Promise.resolve()).then(loaded, () => undefined);
      else if (isTimerClock(clock)) clock.setTimeout(loaded, Math.ceil(mine.reduce((s, x) => s + x.seconds, 0) * 1000));
      else loaded();
    }
  }
}

function oldNodes(m: PendingMove): ReadonlySet<string> {
  const out = new Set<string>();
  for (const p of m.order.removes) for (const s of p.stages) out.add(s.nodeId);
  return out;
}
