/**
 * W5 with many orchestrators that share the load signal (docs/replication.md, "Shared load"), in
 * the load simulation: W5's Poisson arrivals at ρ = 0.7 spread at random over `routers` real
 * Swarms, each reserving its routes. Each Swarm's in-flight changes are announced as the
 * replicas' load channel announces them (its whole in-flight state, numbered) and merged into
 * every other Swarm's cost by the same {@link MergedInflight} the replicas run, `delayMs` later:
 * the modelled announcement delay (the coalescing window plus the network). It compares one
 * router, `routers` that see only their own reservations, and `routers` sharing at each delay,
 * as p99 against one router's on the same arrivals. Pure: no IO.
 */
import { RoutingError } from '../src/core/errors.js';
import type { Route } from '../src/core/types.js';
import type { LoadAnnouncement } from '../src/replication/load-announcement.js';
import { MergedInflight } from '../src/replication/merged-inflight.js';
import { createSwarm } from '../src/runtime/create-swarm.js';
import { kInternals, type SharedInflight } from '../src/runtime/internal.js';
import type { Lease, LeasedRoute } from '../src/runtime/types.js';
import { runEngine, simClock, type SimClock } from '../src/sim/load/engine.js';
import { resolveStages, buildTopology, DEFAULT_TOPOLOGY, type BuiltTopology } from '../src/sim/load/load-topology.js';
import { measure } from '../src/sim/load/metrics.js';
import { createRng, deriveSeed } from '../src/sim/load/rng.js';
import type { Outcome, Pick, Router } from '../src/sim/load/router.js';
import { fourRoutersWorkload, type Workload } from '../src/sim/load/workloads.js';

/** Options of {@link runSharedLoadSim}. */
export interface SharedLoadSimOptions {
  /** Seeds `seed`, `seed + 1`, … @defaultValue 5 */
  readonly seeds?: number;
  /** @defaultValue 1 */
  readonly seed?: number;
  /** Requests per run. @defaultValue 20000 */
  readonly requests?: number;
  /** Orchestrators. @defaultValue 8 */
  readonly routers?: number;
  /** The announcement delays modelled, ms. @defaultValue [0, 0.5, 1, 2, 5, 20] */
  readonly delaysMs?: readonly number[];
}

/** One variant over the seeds. */
export interface SharedLoadRow {
  /** `one`, `own` (each router its own reservations only) or `shared`. */
  readonly variant: 'one' | 'own' | 'shared';
  readonly routers: number;
  /** The announcement delay (shared only), ms. */
  readonly delayMs: number | null;
  /** p99 per seed, ms. */
  readonly p99: readonly number[];
  /** p99 / one router's p99 on the same arrivals, per seed. */
  readonly ratios: readonly number[];
  /** The median of `ratios`. */
  readonly medianRatio: number;
  /** Announcements merged per request routed (shared only). */
  readonly mergesPerRequest: number | null;
}

/** What {@link runSharedLoadSim} measured. */
export interface SharedLoadSimResult {
  readonly seeds: readonly number[];
  readonly requests: number;
  readonly rows: readonly SharedLoadRow[];
}

/** Announcements in flight between the simulated orchestrators, delivered `delayMs` after they were made. */
class AnnouncementBus {
  private readonly queue: { readonly at: number; readonly a: LoadAnnouncement }[] = [];
  private head = 0;
  private readonly members: MergedInflight[] = [];
  merges = 0;

  constructor(
    private readonly clock: SimClock,
    private readonly delayMs: number | null,
  ) {}

  /** A router joins: it announces its own changes and merges the others'. */
  join(id: string, load: SharedInflight): void {
    if (this.delayMs === null) return; // own reservations only
    const delay = this.delayMs;
    const merged = new MergedInflight(id, () => this.clock.now(), (nodeId, count) => load.setRemote(nodeId, count));
    this.members.push(merged);
    let seq = 0;
    load.onLocal(() => {
      const inflight: Record<string, number> = {};
      for (const [nodeId, n] of load.local()) if (n > 0) inflight[nodeId] = n;
      this.queue.push({ at: this.clock.now() + delay, a: { v: 1, replica: id, epoch: id, seq: ++seq, holdMs: 60_000, inflight } });
    });
  }

  /** Merges every announcement due by now (before a router acts, so it sees what has arrived). */
  deliver(now: number): void {
    while (this.head < this.queue.length && (this.queue[this.head] as { at: number }).at <= now) {
      const { a } = this.queue[this.head++] as { a: LoadAnnouncement };
      for (const m of this.members) if (m.receive(a)) this.merges++;
    }
    if (this.head > 4096) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}

/** One orchestrator: a real Swarm reserving each route, releasing it with the observed latency. */
class SharedRouter implements Router {
  private readonly swarm;

  constructor(
    private readonly topology: BuiltTopology,
    private readonly clock: SimClock,
    private readonly bus: AnnouncementBus,
    index: number,
    seed: number,
  ) {
    this.swarm = createSwarm(topology.profiles, { models: [topology.spec.model] }, { clock, seed, leaseNamespace: `o${index}:` });
    bus.join(`o${index}`, this.swarm[kInternals].load);
  }

  pick(now: number): Pick | undefined {
    this.bus.deliver(now);
    let route: LeasedRoute;
    try {
      route = this.swarm.route({}, { reserve: true });
    } catch (error) {
      if (error instanceof RoutingError && error.code === 'NoHealthyPipeline') return undefined;
      throw error;
    }
    const index = this.topology.pipelineIndex.get(route.pipelineId);
    if (index === undefined) throw new Error(`the swarm routed to pipeline "${route.pipelineId}" that the simulation does not know`);
    const planned = this.topology.pipelines[index] as { stages: Pick['stages'] };
    const stages = sameNodes(planned.stages, route) ? planned.stages : resolveStages(route.stages, this.topology.nodes, this.topology.nodeIndex, this.topology.spec.msPerLayer);
    return { pipeline: index, stages, token: route.lease };
  }

  done(now: number, pick: Pick, outcome: Outcome): void {
    this.bus.deliver(now);
    const lease = pick.token as Lease;
    if (lease.expiresAt > this.clock.now()) this.swarm.release(lease, { latencyMs: outcome.latencyMs, ok: outcome.ok });
  }

  telemetry(now: number, nodeId: string, sample: Parameters<Router['telemetry']>[2]): void {
    this.bus.deliver(now);
    this.swarm.report(nodeId, sample);
  }

  health(now: number, nodeId: string, alive: boolean): void {
    this.bus.deliver(now);
    if (alive) this.swarm.markAlive(nodeId);
    else this.swarm.markDown(nodeId);
  }
}

function sameNodes(stages: Pick['stages'], route: Route): boolean {
  return stages.length === route.stages.length && stages.every((s, i) => s.nodeId === route.stages[i]?.nodeId && s.layers === (route.stages[i]?.layerEnd ?? 0) - (route.stages[i]?.layerStart ?? 0));
}

/** One run: `routers` orchestrators (`delayMs` null: each sees its own reservations only); its p99 and merges. */
function runOnce(topology: BuiltTopology, workload: Workload, routers: number, delayMs: number | null, seed: number): { p99: number; merges: number } {
  const clock = simClock();
  const bus = new AnnouncementBus(clock, delayMs);
  const trace = runEngine({
    topology,
    workload,
    clock,
    timeoutMs: 2000,
    monitor: { periodMs: 100, delayMs: 50 },
    routers: () => Array.from({ length: routers }, (_, r) => new SharedRouter(topology, clock, bus, r, deriveSeed(seed, 'shared-load', r, 'ids'))),
  });
  return { p99: measure(trace, workload, topology).p99, merges: bus.merges };
}

/**
 * Runs W5 through one orchestrator, `routers` on their own, and `routers` sharing their
 * reservations at each modelled announcement delay; same arrivals for every variant of a seed.
 * @example runSharedLoadSim({ seeds: 2, requests: 4000, delaysMs: [10] })
 */
export function runSharedLoadSim(options: SharedLoadSimOptions = {}): SharedLoadSimResult {
  const seeds = Array.from({ length: options.seeds ?? 5 }, (_, i) => (options.seed ?? 1) + i);
  const requests = options.requests ?? 20_000;
  const routers = options.routers ?? 8;
  const delays = options.delaysMs ?? [0, 0.5, 1, 2, 5, 20];
  const topology = buildTopology(DEFAULT_TOPOLOGY);
  const variants: { variant: SharedLoadRow['variant']; routers: number; delayMs: number | null }[] = [
    { variant: 'one', routers: 1, delayMs: null },
    { variant: 'own', routers, delayMs: null },
    ...delays.map((d) => ({ variant: 'shared' as const, routers, delayMs: d })),
  ];
  const p99 = variants.map(() => [] as number[]);
  const merges = variants.map(() => 0);
  for (const seed of seeds) {
    const w5 = fourRoutersWorkload.build(topology, seed, requests);
    variants.forEach((v, i) => {
      // The same arrivals, spread at random over this variant's routers.
      const spread = createRng(deriveSeed(seed, 'shared-load', 'routers', v.routers));
      const workload: Workload = { ...w5, routers: v.routers, arrivals: w5.arrivals.map((a) => ({ ...a, router: v.routers > 1 ? spread.int(v.routers) : 0 })) };
      const r = runOnce(topology, workload, v.routers, v.delayMs, seed);
      p99[i]?.push(r.p99);
      merges[i] = (merges[i] ?? 0) + r.merges;
    });
  }
  const rows = variants.map((v, i): SharedLoadRow => {
    const ratios = (p99[i] ?? []).map((x, s) => x / ((p99[0] ?? [])[s] ?? NaN));
    return { ...v, p99: p99[i] ?? [], ratios, medianRatio: medianOf(ratios), mergesPerRequest: v.variant === 'shared' ? (merges[i] ?? 0) / (requests * seeds.length) : null };
  });
  return { seeds, requests, rows };
}

/** The result as a Markdown table. */
export function sharedLoadTable(result: SharedLoadSimResult): string {
  const lines = ['| orchestrators | load signal | announcement delay | p99 ms (median) | p99 / one orchestrator\'s, per seed | median ratio | merges per request |', '|--:|---|--:|--:|---|--:|--:|'];
  for (const r of result.rows) {
    const signal = r.variant === 'one' ? 'its own' : r.variant === 'own' ? 'each its own' : 'shared';
    lines.push(`| ${r.routers} | ${signal} | ${r.delayMs === null ? '–' : `${r.delayMs} ms`} | ${medianOf(r.p99).toFixed(1)} | ${r.ratios.map((x) => x.toFixed(2)).join(', ')} | ${r.medianRatio.toFixed(3)} | ${r.mergesPerRequest === null ? '–' : r.mergesPerRequest.toFixed(1)} |`);
  }
  return lines.join('\n');
}

function medianOf(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}
