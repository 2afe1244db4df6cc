/**
 * Runs the load simulation: every workload × policy × seed through the engine, summarised per
 * run and as medians over the seeds. Pure: returns plain data; the CLI writes it.
 */
import { z } from 'zod';
import { describeValue } from '../../core/describe.js';
import { PlanError } from '../../core/errors.js';
import { InputError } from '../input-error.js';
import { firstIssue, modelSpecSchema, nodeProfileSchema, TOPOLOGY_LIMITS } from '../topology.js';
import { runEngine, simClock, type MonitorOptions } from './engine.js';
import { measure, CDF_LEVELS, type CopyShare, type RunMetrics } from './metrics.js';
import { POLICIES } from './policies.js';
import { createRng, deriveSeed } from './rng.js';
import type { Policy } from './router.js';
import { evaluateTargets, type TargetResult } from './targets.js';
import { buildTopology, DEFAULT_TOPOLOGY, type LoadTopology } from './load-topology.js';
import { burstyShape, DEFAULT_SIZE_CV, WORKLOADS, type BurstyShape, type WorkloadSpec } from './workloads.js';

/**
 * Bounds of a load simulation (docs/inputs.md): seeds × requests per run may not exceed
 * `work`, so that no options ask for hours (at ≈ 25 s per seed of 20,000 requests over every
 * workload on a 2-core machine, the limit is ≈ 20 minutes). W6 (sessions): seeds × sessions
 * per run may not exceed `sessionWork` (≈ 17 ms per session and seed over its three
 * strategies: the limit is ≈ 80 s, ten times the default run).
 */
export const LOAD_SIM_LIMITS = { seeds: 100, requests: 1_000_000, work: 1_000_000, sessions: 10_000, sessionWork: 4_800 } as const;

const finitePositive = z.number().positive().refine(Number.isFinite, 'must be finite');
const loadOptionsSchema = z.object({
  seed: z.int().min(0).max(2 ** 31 - 1).optional(),
  seeds: z.int().min(1).max(LOAD_SIM_LIMITS.seeds).optional(),
  workloads: z.array(z.string()).optional(),
  policies: z
    .array(z.custom<Policy>((p) => p !== null && typeof p === 'object' && typeof (p as Policy).id === 'string' && typeof (p as Policy).label === 'string' && typeof (p as Policy).create === 'function', 'must be a policy { id, label, create }'))
    .min(1)
    .optional(),
  requests: z.int().min(100).max(LOAD_SIM_LIMITS.requests).optional(),
  topology: z
    .strictObject({
      nodes: z.array(nodeProfileSchema.extend({ slots: z.int().min(1).max(1000).optional() })).min(1).max(TOPOLOGY_LIMITS.nodes),
      model: modelSpecSchema,
      msPerLayer: finitePositive,
      hopMs: z.number().min(0).refine(Number.isFinite, 'must be finite'),
    })
    .optional(),
  // Times in ms of at least 1: a monitor period of 1e-300 ms would tick forever.
  timeoutMs: z.number().min(1).max(1e9).optional(),
  monitor: z.strictObject({ periodMs: z.number().min(1).max(1e9).optional(), delayMs: z.number().min(0).max(1e9).optional() }).optional(),
  sizeCv: z.number().min(0).max(10).optional(),
  bursty: z.record(z.string(), z.unknown()).optional(),
  onProgress: z.custom<NonNullable<LoadSimOptions['onProgress']>>((f) => typeof f === 'function', 'must be a function').optional(),
});

/**
 * Checks load-simulation options: types, bounds ({@link LOAD_SIM_LIMITS}), workload ids, W2's shape
 * and a custom topology the planner can place.
 * @throws {InputError} naming the option.
 */
function checkLoadOptions(options: unknown): LoadSimOptions {
  const file = 'runLoadSim options';
  if (options === null || typeof options !== 'object') throw new InputError(file, '$', `must be an object, got ${describeValue(options)}`);
  const parsed = loadOptionsSchema.safeParse(options);
  if (!parsed.success) throw firstIssue(parsed.error.issues, file, '$');
  const o = parsed.data as LoadSimOptions;
  const work = (o.seeds ?? 10) * (o.requests ?? 20_000);
  if (work > LOAD_SIM_LIMITS.work) throw new InputError(file, '$', `seeds × requests is ${work}, over the limit of ${LOAD_SIM_LIMITS.work}`);
  try {
    selectWorkloads(o.workloads);
    burstyShape(o.bursty);
  } catch (error) {
    throw new InputError(file, '$', error instanceof Error ? error.message : String(error), { cause: error });
  }
  if (o.topology !== undefined) {
    try {
      buildTopology(o.topology);
    } catch (error) {
      if (!(error instanceof PlanError)) throw error;
      throw new InputError(file, '$.topology', error.message, { cause: error });
    }
  }
  return o;
}

/** What to simulate. */
export interface LoadSimOptions {
  /** First seed; seeds are `seed, seed + 1, ...`. @defaultValue 1 */
  readonly seed?: number;
  /** Number of seeds. @defaultValue 10 */
  readonly seeds?: number;
  /** Workload ids to run (prefix match, e.g. `w1`). @defaultValue all */
  readonly workloads?: readonly string[];
  /** @defaultValue {@link POLICIES} */
  readonly policies?: readonly Policy[];
  /** Requests per run. @defaultValue 20000 */
  readonly requests?: number;
  readonly topology?: LoadTopology;
  /** Client timeout, ms. @defaultValue 2000 */
  readonly timeoutMs?: number;
  readonly monitor?: Partial<MonitorOptions>;
  /** Request-size variability. @defaultValue {@link DEFAULT_SIZE_CV} */
  readonly sizeCv?: number;
  /** W2's traffic shape. @defaultValue {@link DEFAULT_BURSTY} */
  readonly bursty?: Partial<BurstyShape>;
  /** Called after each run, for a progress bar. */
  readonly onProgress?: (done: number, total: number, label: string) => void;
}

/** Medians over the seeds of one policy on one workload. */
export interface PolicyResult {
  readonly policy: string;
  readonly label: string;
  readonly oracle: boolean;
  /** Medians over the seeds. */
  readonly median: Omit<RunMetrics, 'cdf' | 'requests'>;
  /** The per-seed values of the headline metrics, in seed order. */
  readonly runs: readonly { readonly seed: number; readonly p50: number; readonly p99: number; readonly p999: number; readonly deadSent: number; readonly herdIndex: number | null }[];
  /** Latency at each level of `cdfLevels`: the pointwise median over the seeds, ms. */
  readonly cdf: readonly number[];
}

/** One workload's results. */
export interface WorkloadResult {
  readonly workload: string;
  readonly label: string;
  /** Median offered load over the seeds. */
  readonly rho: number;
  readonly routers: number;
  readonly deadNode: string | null;
  readonly policies: readonly PolicyResult[];
}

/** Everything a load simulation produced. Plain, JSON-serialisable, byte-identical per seed. */
export interface LoadSimResult {
  readonly tool: 'hecate-node load-sim';
  readonly seeds: readonly number[];
  readonly requestsPerRun: number;
  readonly timeoutMs: number;
  readonly sizeCv: number;
  /** W2's traffic shape. */
  readonly bursty: BurstyShape;
  readonly monitor: MonitorOptions;
  readonly topology: {
    readonly hopMs: number;
    readonly msPerLayer: number;
    readonly nodes: readonly { readonly id: string; readonly score: number; readonly slots: number }[];
    readonly pipelines: readonly { readonly id: string; readonly nodes: readonly string[]; readonly capacityPerS: number; readonly capacityShare: number; readonly idleLatencyMs: number }[];
  };
  readonly cdfLevels: readonly number[];
  readonly workloads: readonly WorkloadResult[];
  readonly targets: readonly TargetResult[];
}

/** The workload specs matching `ids` (exact id or prefix). @throws Error naming an id that matches none. */
export function selectWorkloads(ids: readonly string[] | undefined): WorkloadSpec[] {
  if (ids === undefined || ids.length === 0) return [...WORKLOADS];
  const out: WorkloadSpec[] = [];
  for (const id of ids) {
    const match = WORKLOADS.filter((w) => w.id === id || w.id.startsWith(id));
    if (match.length === 0) throw new RangeError(`unknown workload "${id}" (workloads: ${WORKLOADS.map((w) => w.id).join(', ')})`);
    for (const w of match) if (!out.includes(w)) out.push(w);
  }
  return WORKLOADS.filter((w) => out.includes(w));
}

/**
 * Runs the load simulation.
 * @throws {InputError} naming a bad option, or one over {@link LOAD_SIM_LIMITS}.
 * @example const result = runLoadSim({ seeds: 2, requests: 2000, workloads: ['w1'] });
 */
export function runLoadSim(optionsArg: LoadSimOptions = {}): LoadSimResult {
  const options = checkLoadOptions(optionsArg);
  const first = options.seed ?? 1;
  const seeds = Array.from({ length: options.seeds ?? 10 }, (_, i) => first + i);
  const requests = options.requests ?? 20_000;
  const timeoutMs = options.timeoutMs ?? 2000;
  const monitor: MonitorOptions = { periodMs: options.monitor?.periodMs ?? 100, delayMs: options.monitor?.delayMs ?? 50 };
  const policies = options.policies ?? POLICIES;
  const sizeCv = options.sizeCv ?? DEFAULT_SIZE_CV;
  const bursty = burstyShape(options.bursty);
  const specs = selectWorkloads(options.workloads);
  const topology = buildTopology(options.topology ?? DEFAULT_TOPOLOGY);
  const total = specs.length * seeds.length * policies.length;
  let done = 0;

  const workloads: WorkloadResult[] = specs.map((spec) => {
    const perPolicy = policies.map(() => [] as RunMetrics[]);
    const rhos: number[] = [];
    let routers = 1;
    let deadNode: string | null = null;
    for (const seed of seeds) {
      const workload = spec.build(topology, seed, requests, { sizeCv, bursty });
      rhos.push(workload.rho);
      routers = workload.routers;
      deadNode = workload.deadNode ?? null;
      policies.forEach((policy, pi) => {
        const clock = simClock();
        const trace = runEngine({
          topology,
          workload,
          clock,
          timeoutMs,
          monitor,
          routers: (view) =>
            Array.from({ length: workload.routers }, (_, r) =>
              policy.create({ topology, clock, view, routerIndex: r, seed: deriveSeed(seed, spec.id, policy.id, r, 'ids'), rng: createRng(deriveSeed(seed, spec.id, policy.id, r)) }),
            ),
        });
        perPolicy[pi]?.push(measure(trace, workload, topology));
        options.onProgress?.(++done, total, `${spec.id} ${policy.id} seed ${seed}`);
      });
    }
    return {
      workload: spec.id,
      label: spec.label,
      rho: round(median(rhos), 3),
      routers,
      deadNode,
      policies: policies.map((policy, pi) => summarise(policy, perPolicy[pi] ?? [], seeds)),
    };
  });

  return {
    tool: 'hecate-node load-sim',
    seeds,
    requestsPerRun: requests,
    timeoutMs,
    sizeCv,
    bursty,
    monitor,
    topology: {
      hopMs: topology.spec.hopMs,
      msPerLayer: topology.spec.msPerLayer,
      nodes: topology.nodes.map((n) => ({ id: n.id, score: n.score, slots: n.slots })),
      pipelines: topology.pipelines.map((p) => ({
        id: p.id,
        nodes: p.stages.map((s) => s.nodeId),
        capacityPerS: round(p.capacity * 1000, 2),
        capacityShare: round(p.capacity / topology.capacity, 4),
        idleLatencyMs: round(p.idleLatencyMs, 2),
      })),
    },
    cdfLevels: CDF_LEVELS.map((p) => round(p, 6)),
    workloads,
    targets: evaluateTargets(workloads, topology.pipelines.length),
  };
}

function summarise(policy: Policy, runs: readonly RunMetrics[], seeds: readonly number[]): PolicyResult {
  const med = (f: (m: RunMetrics) => number, digits = 3) => round(median(runs.map(f)), digits);
  const herds = runs.map((m) => m.herdIndex).filter((h): h is number => h !== null);
  const shares: CopyShare[] = (runs[0]?.shares ?? []).map((s, c) => ({
    pipelineId: s.pipelineId,
    traffic: round(median(runs.map((m) => m.shares[c]?.traffic ?? 0)), 4),
    capacity: round(s.capacity, 4),
  }));
  return {
    policy: policy.id,
    label: policy.label,
    oracle: policy.oracle === true,
    median: {
      p50: med((m) => m.p50),
      p99: med((m) => m.p99),
      p999: med((m) => m.p999),
      mean: med((m) => m.mean),
      errorRate: med((m) => m.errorRate, 5),
      timeoutRate: med((m) => m.timeoutRate, 5),
      deadSent: med((m) => m.deadSent, 1),
      herdIndex: herds.length === 0 ? null : round(median(herds), 4),
      shares,
    },
    runs: runs.map((m, i) => ({ seed: seeds[i] ?? 0, p50: round(m.p50, 3), p99: round(m.p99, 3), p999: round(m.p999, 3), deadSent: m.deadSent, herdIndex: m.herdIndex === null ? null : round(m.herdIndex, 4) })),
    cdf: CDF_LEVELS.map((_, k) => round(median(runs.map((m) => m.cdf[k] ?? 0)), 3)),
  };
}

/** The median (mean of the two middle values for an even count); 0 for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Rounds to `digits` decimals (keeps JSON short and stable). */
export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
