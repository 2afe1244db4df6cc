/**
 * W8, overload (docs/admission.md, "Measured: W8"): arrivals past the swarm's capacity in three
 * priority classes with deadlines, through the real Swarm and its real admission
 * (`swarm.admit`), against no admission (today's `route(…, { reserve: true })`) and one FIFO
 * queue. Nodes serve `slots` requests at once from a FIFO queue, with a delay on every hop; a
 * request runs to its end once dispatched (no cancellation here). Virtual time only: the Swarm
 * reads the simulation's clock, and the loop lets the admissions' promises settle between events.
 */
import { RoutingError } from '../../core/errors.js';
import type { NodeProfile } from '../../core/types.js';
import { kInternals } from '../../runtime/internal.js';
import { createSwarm } from '../../runtime/index.js';
import type { AdmissionConfig } from '../../core/admission-config.js';
import type { LeasedRoute } from '../../runtime/types.js';
import { EventQueue } from './event-queue.js';
import { buildTopology, DEFAULT_TOPOLOGY, type LoadTopology, type SimStage } from './load-topology.js';
import { quantile } from './metrics.js';
import { createRng, deriveSeed } from './rng.js';

/** One class of traffic. */
export interface OverloadClass {
  readonly name: string;
  /** Its share of the arrivals. */
  readonly share: number;
  readonly priority: number;
  /** The client's budget: a request done later is not goodput; one still queued then is refused. */
  readonly deadlineMs: number;
}

/** W8's classes: critical 10%, standard 60%, sheddable 30%. */
export const W8_CLASSES: readonly OverloadClass[] = Object.freeze([
  { name: 'critical', share: 0.1, priority: 2, deadlineMs: 400 },
  { name: 'standard', share: 0.6, priority: 0, deadlineMs: 1000 },
  { name: 'sheddable', share: 0.3, priority: -1, deadlineMs: 2000 },
]);

/** What is compared: no admission (today), one FIFO queue, ours (bands, shares). */
export type OverloadPolicy = 'none' | 'fifo' | 'ours';
export const OVERLOAD_POLICIES: readonly OverloadPolicy[] = Object.freeze(['none', 'fifo', 'ours']);

/** W8's admission for ours: standard keeps a 50% share, sheddable 10%; a queue of 64; headroom 2 (docs/admission.md). */
export const W8_ADMISSION: AdmissionConfig = Object.freeze({ queueSize: 64, headroom: 2, shares: Object.freeze({ '0': 0.5, '-1': 0.1 }) });

/** One run. */
export interface OverloadOptions {
  readonly policy: OverloadPolicy;
  /** Offered load, arrivals ÷ capacity. */
  readonly rho: number;
  readonly requests: number;
  readonly seed: number;
  /** @defaultValue {@link DEFAULT_TOPOLOGY}, every node 1 slot */
  readonly topology?: LoadTopology;
  readonly classes?: readonly OverloadClass[];
  /** Ours' admission config (fifo uses its `queueSize` alone). @defaultValue {@link W8_ADMISSION} */
  readonly admission?: AdmissionConfig;
  /** Request size coefficient of variation (log-normal, mean 1). @defaultValue 0.5 */
  readonly sizeCv?: number;
}

/** One class's figures. */
export interface OverloadClassResult {
  readonly name: string;
  readonly offered: number;
  /** Finished within its deadline. */
  readonly good: number;
  /** Goodput ÷ the swarm's capacity (requests per ms each). */
  readonly goodputShare: number;
  /** Refused by admission: queue full or shed, and past the deadline while queued. */
  readonly saturated: number;
  readonly deadline: number;
  /** Latency p50 and p99 over the class's arrivals, ms; a refused or late request counts as Infinity (printed as null). */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

/** One run's figures. */
export interface OverloadResult {
  readonly policy: OverloadPolicy;
  readonly rho: number;
  /** Requests finished within their deadline per ms ÷ capacity (requests per ms). */
  readonly goodput: number;
  /** Latency p99 of the requests that finished, ms. */
  readonly p99DoneMs: number;
  /** Most requests waiting in admission's queue at once. */
  readonly maxQueued: number;
  readonly classes: readonly OverloadClassResult[];
}

interface Req {
  readonly i: number;
  readonly t0: number;
  readonly size: number;
  readonly cls: number;
  stages: readonly SimStage[];
  stage: number;
  lease: LeasedRoute['lease'] | undefined;
}

type Ev = { readonly k: 'arrive'; readonly i: number } | { readonly k: 'enter'; readonly r: Req } | { readonly k: 'served'; readonly r: Req; readonly node: number } | { readonly k: 'respond'; readonly r: Req };

/** Runs W8 once. Deterministic: the same options give the same figures. */
export async function runOverload(options: OverloadOptions): Promise<OverloadResult> {
  const spec = options.topology ?? DEFAULT_TOPOLOGY;
  const topology = buildTopology(spec);
  const classes = options.classes ?? W8_CLASSES;
  const clock = { t: 0, now() { return this.t; } };
  const profiles: NodeProfile[] = spec.nodes.map((n) => ({ ...n, slots: n.slots ?? 1 }));
  // FIFO: the same queue and headroom, one band, no shares.
  const { shares: _shares, order: _order, ...single } = options.admission ?? W8_ADMISSION;
  const admission = options.policy === 'ours' ? (options.admission ?? W8_ADMISSION) : single;
  const swarm = createSwarm(profiles, { models: [spec.model], releaseSampleMs: 0, admission }, { clock, seed: options.seed });
  const queueOf = swarm[kInternals].admission;
  // Arrivals: Poisson at rho × capacity, sizes log-normal, classes by share (common random numbers per seed).
  const arrivalsRng = createRng(deriveSeed(options.seed, 'w8', 'arrivals'));
  const sizeRng = createRng(deriveSeed(options.seed, 'w8', 'sizes'));
  const classRng = createRng(deriveSeed(options.seed, 'w8', 'classes'));
  const rate = options.rho * topology.capacity;
  const n = options.requests;
  const times = new Float64Array(n);
  const sizes = new Float64Array(n);
  const cls = new Uint8Array(n);
  for (let i = 0, t = 0; i < n; i++) {
    t += arrivalsRng.exp(1 / rate);
    times[i] = t;
    sizes[i] = sizeRng.unitLogNormal(options.sizeCv ?? 0.5);
    let u = classRng.next();
    let c = 0;
    while (c < classes.length - 1 && u >= (classes[c] as OverloadClass).share) u -= (classes[c++] as OverloadClass).share;
    cls[i] = c;
  }
  const latency = new Float64Array(n).fill(Infinity);
  const refused = new Uint8Array(n); // 1 saturated, 2 deadline
  const nodes = topology.nodes.map((node) => ({ slots: node.slots, busy: 0, queue: [] as Req[] }));
  const q = new EventQueue<Ev>();
  for (let i = 0; i < n; i++) q.push(times[i] as number, { k: 'arrive', i });
  const hopMs = spec.hopMs;
  const msPerLayer = spec.msPerLayer;
  let maxQueued = 0;

  const dispatch = (r: Req, leased: LeasedRoute) => {
    const index = topology.pipelineIndex.get(leased.pipelineId) as number;
    r.stages = (topology.pipelines[index] as { stages: readonly SimStage[] }).stages;
    r.lease = leased.lease;
    q.push(clock.t + hopMs, { k: 'enter', r });
  };
  const start = (r: Req, ni: number) => {
    const node = nodes[ni] as (typeof nodes)[number];
    node.busy++;
    const stage = r.stages[r.stage] as SimStage;
    const ms = (r.size * stage.layers * msPerLayer) / (topology.nodes[ni] as { score: number }).score;
    q.push(clock.t + ms, { k: 'served', r, node: ni });
  };

  while (q.size > 0) {
    clock.t = q.peekTime();
    const ev = q.pop() as Ev;
    if (ev.k === 'arrive') {
      const c = classes[cls[ev.i] as number] as OverloadClass;
      const r: Req = { i: ev.i, t0: clock.t, size: sizes[ev.i] as number, cls: cls[ev.i] as number, stages: [], stage: 0, lease: undefined };
      if (options.policy === 'none') dispatch(r, swarm.route({}, { reserve: true }));
      else {
        const priority = options.policy === 'ours' ? c.priority : 0;
        swarm.admit({}, { priority, deadlineMs: c.deadlineMs }).then(
          (leased) => dispatch(r, leased),
          (error: unknown) => {
            if (!(error instanceof RoutingError)) throw error;
            refused[r.i] = error.code === 'DeadlineExceeded' ? 2 : 1;
          },
        );
      }
    } else if (ev.k === 'enter') {
      const node = nodes[(ev.r.stages[ev.r.stage] as SimStage).node] as (typeof nodes)[number];
      if (node.busy < node.slots) start(ev.r, (ev.r.stages[ev.r.stage] as SimStage).node);
      else node.queue.push(ev.r);
    } else if (ev.k === 'served') {
      const node = nodes[ev.node] as (typeof nodes)[number];
      node.busy--;
      const next = node.queue.shift();
      if (next !== undefined) start(next, ev.node);
      const r = ev.r;
      r.stage++;
      q.push(clock.t + hopMs, r.stage < r.stages.length ? { k: 'enter', r } : { k: 'respond', r });
      if (r.stage === r.stages.length) {
        // The last stage answered the orchestrator: the lease ends now, with the latency so far.
        swarm.release(r.lease as LeasedRoute['lease'], { latencyMs: clock.t - r.t0 });
      }
    } else {
      latency[ev.r.i] = clock.t - ev.r.t0;
    }
    // Let admissions settle (their promises resolve in microtasks) before the next event.
    if (options.policy !== 'none') {
      for (let k = 0; k < 3; k++) await Promise.resolve();
      if (queueOf.size > maxQueued) maxQueued = queueOf.size;
    }
  }
  swarm.stop();
  const span = (times[n - 1] as number) || 1;
  const results = classes.map((c, k) => {
    const lat: number[] = [];
    let good = 0;
    let saturated = 0;
    let deadline = 0;
    for (let i = 0; i < n; i++) {
      if (cls[i] !== k) continue;
      const late = (latency[i] as number) > c.deadlineMs;
      lat.push(late ? Infinity : (latency[i] as number));
      if (!late) good++;
      if (refused[i] === 1) saturated++;
      if (refused[i] === 2) deadline++;
    }
    const sorted = Float64Array.from(lat).sort();
    const finite = (x: number) => (Number.isFinite(x) ? round(x) : null);
    return { name: c.name, offered: lat.length, good, goodputShare: round(good / span / topology.capacity, 4), saturated, deadline, p50Ms: finite(quantile(sorted, 0.5)), p99Ms: finite(quantile(sorted, 0.99)) };
  });
  const done = Float64Array.from(latency.filter(Number.isFinite)).sort();
  const good = results.reduce((s, c) => s + c.good, 0);
  return { policy: options.policy, rho: options.rho, goodput: round(good / span / topology.capacity, 4), p99DoneMs: round(quantile(done, 0.99)), maxQueued, classes: results };
}

function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
