/**
 * P2C with peak-EWMA load, as Finagle and Linkerd (tower's `PeakEwma`) do it: each endpoint's
 * cost is its peak-sensitive RTT estimate times (pending + 1); the estimate jumps up to any
 * slower RTT at once and decays towards faster ones (and towards 0 when idle) with time
 * constant τ. Endpoints start at a default RTT and start over when they come back.
 */
import { twoRandom } from './baselines.js';
import { HealthView, type Outcome, type Pick, type Policy, type Router, type RouterContext } from './router.js';

/** Peak-EWMA settings. */
export interface PeakEwmaOptions {
  /** Decay time constant τ, ms. @defaultValue 10000 (Linkerd) */
  readonly decayMs?: number;
  /** RTT assumed before the first response, ms. @defaultValue 30 (Linkerd) */
  readonly defaultRttMs?: number;
}

interface Endpoint {
  rtt: number;
  updateAt: number;
  pending: number;
}

class PeakEwmaRouter implements Router {
  private readonly healthView: HealthView;
  private readonly endpoints: Endpoint[];
  private readonly decayMs: number;
  private readonly defaultRtt: number;

  constructor(private readonly context: RouterContext, options: PeakEwmaOptions) {
    this.decayMs = options.decayMs ?? 10_000;
    this.defaultRtt = options.defaultRttMs ?? 30;
    this.healthView = new HealthView(context.topology);
    this.endpoints = context.topology.pipelines.map(() => ({ rtt: this.defaultRtt, updateAt: 0, pending: 0 }));
  }

  /** tower `RttEstimate::update`: peak up at once, otherwise an EWMA weighted by elapsed time. */
  private update(e: Endpoint, rtt: number, now: number): void {
    if (e.rtt < rtt) e.rtt = rtt;
    else {
      const decay = Math.exp(-Math.max(now - e.updateAt, 0) / this.decayMs);
      e.rtt = e.rtt * decay + rtt * (1 - decay);
    }
    e.updateAt = now;
  }

  /** tower `PeakEwma::load`: decay towards 0 for the time elapsed, times (pending + 1). */
  private cost(i: number, now: number): number {
    const e = this.endpoints[i] as Endpoint;
    this.update(e, 0, now);
    return e.rtt * (e.pending + 1);
  }

  pick(now: number): Pick | undefined {
    const live = this.healthView.live();
    if (live.length === 0) return undefined;
    let index = live[0] as number;
    if (live.length > 1) {
      const [a, b] = twoRandom(live, this.context.rng);
      index = this.cost(a, now) <= this.cost(b, now) ? a : b;
    }
    (this.endpoints[index] as Endpoint).pending++;
    return { pipeline: index, stages: (this.context.topology.pipelines[index] as { stages: Pick['stages'] }).stages };
  }

  done(now: number, pick: Pick, outcome: Outcome): void {
    const e = this.endpoints[pick.pipeline] as Endpoint;
    e.pending--;
    // The RTT of whatever ended the request: a response, an error or the client's timeout.
    this.update(e, outcome.latencyMs, now);
  }

  telemetry(): void {}

  health(now: number, nodeId: string, alive: boolean): void {
    const before = new Set(this.healthView.live());
    this.healthView.health(nodeId, alive);
    if (!alive) return;
    // A copy rediscovered is a new endpoint: it starts from the default RTT.
    for (const i of this.healthView.live()) {
      if (before.has(i)) continue;
      const e = this.endpoints[i] as Endpoint;
      e.rtt = this.defaultRtt;
      e.updateAt = now;
    }
  }
}

/** P2C over peak-EWMA cost (Finagle/Linkerd): cost = peak-EWMA RTT × (pending + 1). */
export function p2cPeakEwma(options: PeakEwmaOptions = {}): Policy {
  return {
    id: 'p2c-peak-ewma',
    label: `P2C + peak-EWMA (τ = ${(options.decayMs ?? 10_000) / 1000} s, default RTT ${options.defaultRttMs ?? 30} ms)`,
    create: (context) => new PeakEwmaRouter(context, options),
  };
}
