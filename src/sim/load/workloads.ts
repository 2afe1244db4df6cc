/**
 * The workloads of the load simulation, generated up front from a seed so that every policy
 * sees exactly the same arrivals, request sizes and disruptions (common random numbers).
 */
import { createRng, deriveSeed, type Rng } from './rng.js';
import type { BuiltTopology, SimPipeline } from './load-topology.js';

/** One request arriving at one router. */
export interface Arrival {
  readonly time: number;
  /** Work multiplier of the request (mean 1): it scales its service time at every stage. */
  readonly size: number;
  readonly router: number;
  /** Index of the flash burst it belongs to, or -1. */
  readonly burst: number;
}

/** A change to the swarm during a run. */
export type Disruption =
  /** The nodes run at `factor` of their speed from `at` until `until`. */
  | { readonly kind: 'slow'; readonly at: number; readonly until: number; readonly nodes: readonly string[]; readonly factor: number }
  /** The node dies: requests on it vanish (`black-hole`, clients time out) or fail at once (`fail-fast`). */
  | { readonly kind: 'die'; readonly at: number; readonly node: string; readonly mode: 'black-hole' | 'fail-fast' }
  /** The node comes back cold: `coldFactor` of its speed for `coldMs`. */
  | { readonly kind: 'revive'; readonly at: number; readonly node: string; readonly coldMs: number; readonly coldFactor: number };

/** One generated workload. */
export interface Workload {
  readonly id: string;
  readonly label: string;
  /** Mean offered load over the whole run, arrivals / capacity. */
  readonly rho: number;
  readonly routers: number;
  readonly arrivals: readonly Arrival[];
  readonly disruptions: readonly Disruption[];
  /** Number of flash bursts. */
  readonly bursts: number;
  /** The node that dies, if one does. */
  readonly deadNode?: string;
}

/** How to generate a workload. */
export interface WorkloadSpec {
  readonly id: string;
  readonly label: string;
  build(topology: BuiltTopology, seed: number, requests: number, shape?: WorkloadShape): Workload;
}

/** What every workload shares. */
export interface WorkloadShape {
  /**
   * Coefficient of variation of request sizes (log-normal, mean 1); 1 is as variable as
   * exponential sizes. @defaultValue {@link DEFAULT_SIZE_CV}
   */
  readonly sizeCv?: number;
  /** W2's traffic shape. @defaultValue {@link DEFAULT_BURSTY} */
  readonly bursty?: Partial<BurstyShape>;
}

/** Request sizes vary by half their mean: short chat turns of similar length. */
export const DEFAULT_SIZE_CV = 0.5;

/** The shape of W2's traffic: on/off Poisson plus flash bursts of 2N–10N requests within 1 ms. */
export interface BurstyShape {
  /** Offered load while on, as a share of capacity. */
  readonly onRho: number;
  /** Offered load while off. */
  readonly offRho: number;
  /** Mean length of an on or off period, ms (exponential). */
  readonly periodMs: number;
  /** Mean time between flash bursts, ms (exponential). */
  readonly burstEveryMs: number;
}

/** W2 by default: ρ 0.9 on, 0.2 off, 400 ms periods, a burst about every second. */
export const DEFAULT_BURSTY: BurstyShape = Object.freeze({ onRho: 0.9, offRho: 0.2, periodMs: 400, burstEveryMs: 1000 });

/** The range each W2 shape field must fall in: loads up to twice the capacity, times of at least 1 ms. */
export const BURSTY_LIMITS: Readonly<Record<keyof BurstyShape, { readonly min: number; readonly minOpen: boolean; readonly max: number }>> = Object.freeze({
  onRho: { min: 0, minOpen: true, max: 2 },
  offRho: { min: 0, minOpen: true, max: 2 },
  periodMs: { min: 1, minOpen: false, max: 1e9 },
  burstEveryMs: { min: 1, minOpen: false, max: 1e9 },
});

/** Why `value` is not a good `field` of a W2 shape, or undefined when it is. */
export function burstyFieldIssue(field: keyof BurstyShape, value: unknown): string | undefined {
  const { min, minOpen, max } = BURSTY_LIMITS[field];
  const ok = typeof value === 'number' && Number.isFinite(value) && (minOpen ? value > min : value >= min) && value <= max;
  return ok ? undefined : `must be a number ${minOpen ? '>' : '>='} ${min} and <= ${max}, got ${String(value)}`;
}

/** The W2 shape with every default filled in. @throws RangeError naming a bad field. */
export function burstyShape(shape: Partial<BurstyShape> = {}): BurstyShape {
  const out = { ...DEFAULT_BURSTY, ...shape };
  for (const field of Object.keys(DEFAULT_BURSTY) as (keyof BurstyShape)[]) {
    const issue = burstyFieldIssue(field, out[field]);
    if (issue !== undefined) throw new RangeError(`W2 shape "${field}" ${issue}`);
  }
  return out;
}

/** Poisson arrivals at `rate` per ms until `count` requests. */
function poisson(rng: Rng, sizes: () => number, rate: number, count: number, routers: number, routerRng: Rng): Arrival[] {
  const out: Arrival[] = [];
  let t = 0;
  for (let i = 0; i < count; i++) {
    t += rng.exp(1 / rate);
    out.push({ time: t, size: sizes(), router: routers > 1 ? routerRng.int(routers) : 0, burst: -1 });
  }
  return out;
}

function streams(seed: number, id: string, shape: WorkloadShape = {}): { arrivals: Rng; sizes: () => number; routers: Rng } {
  const sizes = createRng(deriveSeed(seed, id, 'sizes'));
  const cv = shape.sizeCv ?? DEFAULT_SIZE_CV;
  return { arrivals: createRng(deriveSeed(seed, id, 'arrivals')), sizes: () => sizes.unitLogNormal(cv), routers: createRng(deriveSeed(seed, id, 'routers')) };
}

/** The copy with the highest capacity (lowest index on a tie). */
export function fastestPipeline(topology: BuiltTopology): SimPipeline {
  let best = topology.pipelines[0] as SimPipeline;
  for (const p of topology.pipelines) if (p.capacity > best.capacity) best = p;
  return best;
}

/** W1: Poisson arrivals at offered load `rho`. */
export function poissonWorkload(rho: number): WorkloadSpec {
  const id = `w1-rho${rho}`;
  return {
    id,
    label: `W1 Poisson, ρ = ${rho}`,
    build(topology, seed, requests, shape) {
      const s = streams(seed, id, shape);
      return { id, label: this.label, rho, routers: 1, arrivals: poisson(s.arrivals, s.sizes, rho * topology.capacity, requests, 1, s.routers), disruptions: [], bursts: 0 };
    },
  };
}

/**
 * W2: on/off traffic (by default ρ 0.9 while on, 0.2 while off, periods of 400 ms on average)
 * plus flash bursts of 2N–10N requests within 1 ms, about one a second ({@link BurstyShape}).
 */
export const burstyWorkload: WorkloadSpec = {
  id: 'w2-bursty',
  label: 'W2 bursty: on/off + flash bursts of 2N–10N in 1 ms',
  build(topology, seed, requests, shape) {
    const s = streams(seed, this.id, shape);
    const n = topology.pipelines.length;
    const shapeOf = burstyShape(shape?.bursty);
    const out: Arrival[] = [];
    const onRate = shapeOf.onRho * topology.capacity;
    const offRate = shapeOf.offRho * topology.capacity;
    let t = 0;
    let on = true;
    let periodEnd = s.arrivals.exp(shapeOf.periodMs);
    let nextBurst = s.arrivals.exp(shapeOf.burstEveryMs);
    let bursts = 0;
    while (out.length < requests) {
      const gap = s.arrivals.exp(1 / (on ? onRate : offRate));
      if (nextBurst < Math.min(t + gap, periodEnd)) {
        const size = 2 * n + s.arrivals.int(8 * n + 1);
        const times = Array.from({ length: size }, () => nextBurst + s.arrivals.next());
        times.sort((a, b) => a - b);
        for (const time of times) out.push({ time, size: s.sizes(), router: 0, burst: bursts });
        bursts++;
        t = nextBurst;
        nextBurst = t + s.arrivals.exp(shapeOf.burstEveryMs);
        continue;
      }
      if (t + gap > periodEnd) {
        // Memoryless: restart the gap in the next period.
        t = periodEnd;
        on = !on;
        periodEnd = t + s.arrivals.exp(shapeOf.periodMs);
        continue;
      }
      t += gap;
      out.push({ time: t, size: s.sizes(), router: 0, burst: -1 });
    }
    const arrivals = out.sort((a, b) => a.time - b.time).slice(0, requests);
    const span = (arrivals[arrivals.length - 1]?.time ?? 1) || 1;
    return { id: this.id, label: this.label, rho: arrivals.length / span / topology.capacity, routers: 1, arrivals, disruptions: [], bursts };
  },
};

/** W3: Poisson at ρ = 0.5; the fastest copy runs at 1/10 of its speed for the middle third. */
export const slowdownWorkload: WorkloadSpec = {
  id: 'w3-slowdown',
  label: 'W3 fastest copy at 1/10 speed for the middle third, ρ = 0.5',
  build(topology, seed, requests, shape) {
    const s = streams(seed, this.id, shape);
    const arrivals = poisson(s.arrivals, s.sizes, 0.5 * topology.capacity, requests, 1, s.routers);
    const end = arrivals[arrivals.length - 1]?.time ?? 0;
    const nodes = fastestPipeline(topology).stages.map((st) => st.nodeId);
    return { id: this.id, label: this.label, rho: 0.5, routers: 1, arrivals, disruptions: [{ kind: 'slow', at: end / 3, until: (2 * end) / 3, nodes, factor: 0.1 }], bursts: 0 };
  },
};

/**
 * W4: Poisson at ρ = 0.5; the first node of the fastest copy dies for the middle third, then
 * comes back cold (1/3 speed for 3 s).
 */
export function deathWorkload(mode: 'black-hole' | 'fail-fast'): WorkloadSpec {
  const id = `w4-${mode}`;
  return {
    id,
    label: `W4 a node dies (${mode}) and returns cold, ρ = 0.5`,
    build(topology, seed, requests, shape) {
      const s = streams(seed, id, shape);
      const arrivals = poisson(s.arrivals, s.sizes, 0.5 * topology.capacity, requests, 1, s.routers);
      const end = arrivals[arrivals.length - 1]?.time ?? 0;
      const node = (fastestPipeline(topology).stages[0] as { nodeId: string }).nodeId;
      const disruptions: Disruption[] = [
        { kind: 'die', at: end / 3, node, mode },
        { kind: 'revive', at: (2 * end) / 3, node, coldMs: 3000, coldFactor: 1 / 3 },
      ];
      return { id, label: this.label, rho: 0.5, routers: 1, arrivals, disruptions, bursts: 0, deadNode: node };
    },
  };
}

/** W5: Poisson at ρ = 0.7 spread at random over four independent routers. */
export const fourRoutersWorkload: WorkloadSpec = {
  id: 'w5-four-routers',
  label: 'W5 four independent routers, Poisson ρ = 0.7',
  build(topology, seed, requests, shape) {
    const s = streams(seed, this.id, shape);
    return { id: this.id, label: this.label, rho: 0.7, routers: 4, arrivals: poisson(s.arrivals, s.sizes, 0.7 * topology.capacity, requests, 4, s.routers), disruptions: [], bursts: 0 };
  },
};

/** Every workload of the committed results, in report order. */
export const WORKLOADS: readonly WorkloadSpec[] = [
  poissonWorkload(0.5),
  poissonWorkload(0.7),
  poissonWorkload(0.9),
  burstyWorkload,
  slowdownWorkload,
  deathWorkload('black-hole'),
  deathWorkload('fail-fast'),
  fourRoutersWorkload,
];
