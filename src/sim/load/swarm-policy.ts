/**
 * The original design's policy and ours, both through the real runtime: a `Swarm` built by `createSwarm`
 * on the simulation's virtual clock, fed by the same monitor as every other policy. The original
 * design routes on the cost argmin alone; ours reserves each route (`{ reserve: true }`) and releases
 * it with the observed latency, so the next route sees it at once.
 */
import type { CostModel, CostWeights, Route } from '../../core/types.js';
import type { PhiOptions } from '../../core/phi.js';
import { createSwarm, ManualClock } from '../../runtime/index.js';
import type { Lease, LeasedRoute, SwarmConfig } from '../../runtime/types.js';
import type { Outcome, Pick, Policy, Router, RouterContext } from './router.js';
import { routeOrNone, simRoute } from './load-topology.js';

/** Options of the Swarm-backed policies. */
export interface SwarmPolicyOptions {
  /** Reserve every route and release it on completion (ours); false is the original design. */
  readonly reserve: boolean;
  /** Lease lifetime, ms. @defaultValue the runtime's (30 000) */
  readonly leaseTtlMs?: number;
  /** Cost weights of every route; any but the defaults takes the scan path. @defaultValue docs/design.md §4's */
  readonly weights?: Partial<CostWeights>;
  /** The cost model of every route (docs/cost.md); `'original'` takes the scan path. @defaultValue 'layer-aware' */
  readonly costModel?: CostModel;
  /**
   * Find failures on its own: every monitor sample is a heartbeat, the phi-accrual detector in the
   * node actors and passive ejection take nodes down, and the monitor's health reports (the
   * oracle's markDown) are ignored. @defaultValue undefined (health from the monitor)
   */
  readonly detect?: PhiOptions;
}

class SwarmRouter implements Router {
  private readonly swarm;
  /** Leases the runtime had already expired when the client released them. */
  expiredReleases = 0;
  /** With detection: the actors' clock, moved to the simulation's time at every call (its timers fire on the way). */
  private readonly timers: ManualClock | undefined;

  constructor(private readonly context: RouterContext, private readonly options: SwarmPolicyOptions) {
    const { topology } = context;
    const config: SwarmConfig = {
      models: [topology.spec.model],
      ...(options.leaseTtlMs !== undefined ? { leaseTtlMs: options.leaseTtlMs } : {}),
      ...(options.detect !== undefined ? { failureDetector: options.detect } : {}),
    };
    this.timers = options.detect !== undefined ? new ManualClock(context.clock.now()) : undefined;
    this.swarm = createSwarm(topology.profiles, config, { clock: this.timers ?? context.clock, seed: context.seed });
  }

  /** Brings the actors' clock to the simulation's time, firing the detector's and the bans' timers due by then. */
  private sync(): void {
    if (this.timers !== undefined) this.timers.set(Math.max(this.context.clock.now(), this.timers.now()));
  }

  pick(): Pick | undefined {
    this.sync();
    const request = {
      ...(this.options.weights !== undefined ? { weights: this.options.weights } : {}),
      ...(this.options.costModel !== undefined ? { costModel: this.options.costModel } : {}),
    };
    const route: Route | LeasedRoute | undefined = routeOrNone(() => (this.options.reserve ? this.swarm.route(request, { reserve: true }) : this.swarm.route(request)));
    if (route === undefined) return undefined;
    return { ...simRoute(this.context.topology, route), ...('lease' in route ? { token: route.lease } : {}) };
  }

  done(_now: number, pick: Pick, outcome: Outcome): void {
    this.sync();
    const lease = pick.token as Lease | undefined;
    if (lease === undefined) return;
    if (lease.expiresAt <= this.context.clock.now()) {
      this.expiredReleases++;
      return;
    }
    this.swarm.release(lease, { latencyMs: outcome.latencyMs, ok: outcome.ok });
  }

  telemetry(_now: number, nodeId: string, sample: Parameters<Router['telemetry']>[2]): void {
    this.sync();
    if (this.timers !== undefined) this.swarm.heartbeat(nodeId); // a sample is a sign of life
    this.swarm.report(nodeId, sample);
  }

  health(_now: number, nodeId: string, alive: boolean): void {
    if (this.timers !== undefined) return; // it finds out on its own
    if (alive) this.swarm.markAlive(nodeId);
    else this.swarm.markDown(nodeId);
  }
}

/** The seed: the real Swarm's argmin of the seed's cost formula (`costModel: 'original'`), no reservation; telemetry only from the monitor. */
export const seedArgmin: Policy = {
  id: 'seed-argmin',
  label: "the original design's cost argmin (real Swarm, original cost model, no reservation)",
  create: (context) => new SwarmRouter(context, { reserve: false, costModel: 'original' }),
};

/** Ours: the real Swarm with in-flight reservations, released with the observed latency. */
export function oursReserve(options: Omit<SwarmPolicyOptions, 'reserve'> = {}): Policy {
  return {
    id: 'ours-reserve',
    label: 'ours: Swarm cost argmin + in-flight leases (real Swarm)',
    create: (context) => new SwarmRouter(context, { ...options, reserve: true }),
  };
}

/**
 * The detector's settings in the simulation: Akka's scaled to the monitor, whose samples (every
 * 100 ms, 50 ms late) are the heartbeats — a 100 ms interval, a 300 ms acceptable pause, a 10 ms
 * minimum deviation; threshold 8.
 */
export const SIM_DETECTOR: PhiOptions = Object.freeze({ expectedIntervalMs: 100, acceptablePauseMs: 300, minStdDevMs: 10 });

/**
 * Ours finding failures on its own: in-flight leases, and nodes taken down by the phi-accrual
 * detector in the node actors (the monitor's samples are the heartbeats) and by passive ejection
 * (failed releases), never by the monitor's health reports.
 */
export function oursDetect(options: Omit<SwarmPolicyOptions, 'reserve' | 'detect'> & { readonly detect?: PhiOptions } = {}): Policy {
  return {
    id: 'ours-detect',
    label: 'ours finding failures itself: leases + phi detector + ejection, no health reports (real Swarm)',
    create: (context) => new SwarmRouter(context, { ...options, detect: options.detect ?? SIM_DETECTOR, reserve: true }),
  };
}

/**
 * The priors off: the capability term (100/score for a whole model, by layer share) and hop term (15 per hop) are
 * guesses of a node's delay made before anything is measured, and count it twice once the
 * latency EWMA measures it. This routes on the measured latency, utilisation and reservations
 * alone: `capability: 0`, `hops: 0` (a hop's network delay is inside the end-to-end latency each
 * release feeds back). An experiment reported beside ours; the default formula is docs/design.md §4's.
 */
export const LATENCY_WEIGHTS: Partial<CostWeights> = Object.freeze({ capability: 0, hops: 0 });

/** Ours with {@link LATENCY_WEIGHTS}: in-flight leases, cost on measurements only (real Swarm, scan path). */
export function oursLatencyWeights(options: Omit<SwarmPolicyOptions, 'reserve' | 'weights'> & { readonly weights?: Partial<CostWeights> } = {}): Policy {
  const weights = options.weights ?? LATENCY_WEIGHTS;
  return {
    id: 'ours-latency-weights',
    label: `ours with measured-latency weights (${Object.entries(weights).map(([k, v]) => `${k} ${v}`).join(', ')}; real Swarm, scan path)`,
    create: (context) => new SwarmRouter(context, { ...options, weights, reserve: true }),
  };
}
