/**
 * What the orchestrator's pieces share: its clock and models, the agents' address book, the
 * waiting room before the plan, the swarm's seat, the event stream and the metrics. The metrics'
 * gauges read the owners when scraped, so they show what the Swarm says now.
 */
import type { ModelSpec } from '../core/types.js';
import type { Clock, SwarmConfig } from '../runtime/types.js';
import type { RebalancerPlugin } from '../runtime/rebalance-hook.js';
import { ClassLimits } from './client-classes.js';
import { EventStream } from './event-stream.js';
import { countByState } from './agent-view.js';
import { NodeRegistry } from './node-registry.js';
import { ServeMetrics } from './serve-metrics.js';
import { SwarmSeat } from './swarm-seat.js';
import { WaitingRoom } from './waiting-room.js';
import { preciseCache, type PreciseCache } from '../prefix/precise-cache.js';
import { registerPreciseMetrics } from './precise-metrics.js';
import { KvShare } from './kv-share.js';

/** The orchestrator's shared state; every piece is one of these, none reaches into another. */
export interface OrchestratorParts {
  readonly clock: Clock;
  readonly models: readonly ModelSpec[];
  /** The config every swarm of this orchestrator is created with. */
  readonly config: SwarmConfig;
  /** Where each agent listens, whether it left, its calls in flight. */
  readonly registry: NodeRegistry;
  /** The agents that joined before there is a swarm, until it is planned over them. */
  readonly room: WaitingRoom;
  readonly seat: SwarmSeat;
  readonly events: EventStream;
  readonly metrics: ServeMetrics;
  /** Generations under way per client class (`--classes`, client-classes.ts). */
  readonly classLimits: ClassLimits;
  readonly log: (line: string) => void;
  /** `serve --rebalance` (docs/rebalance.md "Replicas, serve and agents"): every swarm is created with this rebalancer. */
  readonly rebalancer?: RebalancerPlugin;
  /** The prefix-cache plug-in every swarm of this orchestrator gets, and its precise feeds (docs/prefix-cache.md, "Precise mode"). */
  readonly precise: PreciseCache;
  /** The agents' KV reports, applied to {@link precise}'s feeds and, replicated, shared with the other replicas. */
  readonly kv: KvShare;
}

/** The parts of a new orchestrator, no swarm seated yet. */
export function createParts(clock: Clock, models: readonly ModelSpec[], config: SwarmConfig, log: (line: string) => void, rebalance?: (registry: NodeRegistry) => RebalancerPlugin): OrchestratorParts {
  // A forgotten agent's series leave /metrics with it: ids an attacker invents do not pile up there.
  const registry = new NodeRegistry((id) => metrics.forgetNode(id));
  const rebalancer = rebalance?.(registry);
  const room = new WaitingRoom();
  const seat = new SwarmSeat();
  const classLimits = new ClassLimits();
  const metrics = new ServeMetrics({
    nodesByState: () => countByState({ registry, room, seat }),
    inflightByNode: () => new Map([...registry.all()].filter((r) => r.url !== undefined).map((r) => [r.id, r.inflight])),
    kvBytesByNode: () => new Map([...registry.all()].flatMap((r) => (r.url !== undefined && !r.left && r.kvBytes !== undefined ? [[r.id, r.kvBytes] as const] : []))),
    routeCostByModel: () => {
      const costs = new Map<string, number>();
      const swarm = seat.swarm;
      if (swarm === undefined) return costs;
      for (const m of models) {
        try {
          costs.set(m.id, swarm.route({ model: m.id }).cost);
        } catch {
          costs.set(m.id, Number.NaN);
        }
      }
      return costs;
    },
    leases: () => seat.swarm?.inFlight() ?? 0,
    replicationLag: () => seat.replica?.lag(),
    classInFlight: () => classLimits.counts(),
    saturation: () => {
      try {
        return seat.local()?.saturation();
      } catch {
        return undefined; // the swarm was stopped (being replaced)
      }
    },
  });
  const precise = preciseCache();
  registerPreciseMetrics(metrics.registry, () => {
    try {
      return precise.feeds()?.stats();
    } catch {
      return undefined; // the swarm was stopped (being replaced)
    }
  });
  return { clock, models, config, registry, room, seat, precise, kv: new KvShare(() => precise.feeds()), events: new EventStream(clock, 15_000, () => metrics.sseDropped.inc()), metrics, classLimits, log, ...(rebalancer !== undefined ? { rebalancer } : {}) };
}
