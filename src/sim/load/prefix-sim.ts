/**
 * Runs W7 (docs/prefix-cache.md, "Simulation"): every prefix workload × policy × seed through the
 * prefix engine, at each workload's reference rate, and for W7a also the highest rate whose p99
 * TTFT stays within {@link TTFT_LIMIT_MS} (a bisection on the rate). Medians over the seeds, and
 * the targets checked against them. Pure: returns plain data.
 */
import { buildTopology, type BuiltTopology } from './load-topology.js';
import { quantile } from './metrics.js';
import { CLIENT_TIMEOUT_MS, TTFT_LIMIT_MS, W7_TOPOLOGY, W7C_TOPOLOGY } from './prefix-constants.js';
import { runPrefixEngine, type PrefixTrace } from './prefix-engine.js';
import { dynamoCost, gieScorers, oracleCache, prefixOnly, roundRobin, sglangCacheAware } from './prefix-policies.js';
import type { PrefixPolicy } from './prefix-router.js';
import { cacheBlind, oursPrefix } from './prefix-swarm-policy.js';
import { PREFIX_WORKLOADS, type PrefixWorkload, type PrefixWorkloadSpec } from './prefix-workloads.js';
import { createRng, deriveSeed } from './rng.js';
import { median, round } from './run.js';

/** Every W7 policy, in report order (the oracle first: it is measured first). */
export const PREFIX_POLICIES: readonly PrefixPolicy[] = [oracleCache, roundRobin, cacheBlind, prefixOnly, sglangCacheAware, gieScorers, dynamoCost, oursPrefix];

/** Each workload's reference rate, requests per second (fixed before the policies were compared). */
export const W7_RATES: Readonly<Record<PrefixWorkloadSpec['id'], number>> = Object.freeze({
  'w7a-shared-prefix': 160,
  'w7b-multi-turn': 160,
  'w7c-little-sharing': 100,
  'w7d-skew': 1200,
});

/** What one run measured. */
export interface PrefixRunMetrics {
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  /** Cached prompt tokens ÷ prompt tokens, over requests whose prefill started. */
  readonly hitRate: number;
  /** Share of requests whose first token came within the client timeout. */
  readonly success: number;
  /** W7a: highest rate (req/s) whose p99 TTFT stays within the limit; null elsewhere. */
  readonly throughput: number | null;
}

/** One policy on one workload. */
export interface PrefixPolicyResult {
  readonly policy: string;
  readonly label: string;
  readonly oracle: boolean;
  readonly median: PrefixRunMetrics;
  readonly runs: readonly (PrefixRunMetrics & { readonly seed: number })[];
}

/** One workload. */
export interface PrefixWorkloadResult {
  readonly workload: string;
  readonly label: string;
  readonly ratePerS: number;
  readonly copies: number;
  readonly policies: readonly PrefixPolicyResult[];
}

/** One target of the issue and whether the medians meet it. */
export interface PrefixTarget {
  readonly workload: string;
  readonly target: string;
  readonly value: number;
  readonly limit: number;
  readonly pass: boolean;
  /** What the oracle reaches on the same measure, for reading a miss. */
  readonly oracle: number | null;
}

/** The whole W7 result. Plain data. */
export interface PrefixSimResult {
  readonly seeds: readonly number[];
  readonly scale: number;
  readonly ttftLimitMs: number;
  readonly timeoutMs: number;
  readonly workloads: readonly PrefixWorkloadResult[];
  readonly targets: readonly PrefixTarget[];
}

/** What to run. */
export interface PrefixSimOptions {
  /** @defaultValue 1 */
  readonly seed?: number;
  /** @defaultValue 10 */
  readonly seeds?: number;
  /** Shrinks every workload's request count (fast checks). @defaultValue 1 */
  readonly scale?: number;
  readonly workloads?: readonly PrefixWorkloadSpec['id'][];
  readonly policies?: readonly PrefixPolicy[];
  /** Bisection steps of the W7a throughput search. @defaultValue 8 */
  readonly searchSteps?: number;
  readonly onProgress?: (label: string) => void;
}

/** Runs one workload at one rate through one policy. */
export function runPrefixOnce(topology: BuiltTopology, workload: PrefixWorkload, policy: PrefixPolicy, seed: number, ratePerS: number): PrefixTrace {
  const clock = { t: 0, now: () => clock.t };
  return runPrefixEngine({
    topology,
    workload,
    ratePerS,
    clock,
    router: (truth) => policy.create({ topology, clock, truth, seed: deriveSeed(seed, workload.id, policy.id, 'ids'), rng: createRng(deriveSeed(seed, workload.id, policy.id)) }),
  });
}

/** Summarises one trace. */
export function measurePrefix(trace: PrefixTrace, throughput: number | null = null): PrefixRunMetrics {
  const n = trace.ttft.length;
  const sorted = Float64Array.from(trace.ttft).sort();
  let cached = 0;
  let prompt = 0;
  let ok = 0;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    sum += trace.ttft[i] as number;
    ok += trace.ok[i] as number;
    if (trace.pipeline[i] !== -1) {
      cached += trace.cached[i] as number;
      prompt += trace.promptTokens[i] as number;
    }
  }
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), mean: n > 0 ? sum / n : 0, hitRate: prompt > 0 ? cached / prompt : 0, success: n > 0 ? ok / n : 0, throughput };
}

/** The highest rate (req/s, within 2%) whose p99 TTFT (a timeout counting as the timeout) stays within the limit. */
export function throughputAtLimit(topology: BuiltTopology, workload: PrefixWorkload, policy: PrefixPolicy, seed: number, steps = 8): number {
  let lo = 10;
  let hi = 4000;
  const fits = (rate: number) => measurePrefix(runPrefixOnce(topology, workload, policy, seed, rate)).p99 <= TTFT_LIMIT_MS;
  if (!fits(lo)) return 0;
  for (let k = 0; k < steps; k++) {
    const mid = Math.sqrt(lo * hi);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Runs W7. */
export function runPrefixSim(options: PrefixSimOptions = {}): PrefixSimResult {
  const first = options.seed ?? 1;
  const seeds = Array.from({ length: options.seeds ?? 10 }, (_, i) => first + i);
  const scale = options.scale ?? 1;
  const policies = options.policies ?? PREFIX_POLICIES;
  const specs = PREFIX_WORKLOADS.filter((w) => options.workloads === undefined || options.workloads.includes(w.id));
  const main = buildTopology(W7_TOPOLOGY);
  const two = buildTopology(W7C_TOPOLOGY);
  const workloads = specs.map((spec): PrefixWorkloadResult => {
    const topology = spec.id === 'w7c-little-sharing' ? two : main;
    const rate = W7_RATES[spec.id];
    const perPolicy = policies.map(() => [] as (PrefixRunMetrics & { seed: number })[]);
    for (const seed of seeds) {
      const workload = spec.build(seed, scale);
      policies.forEach((policy, pi) => {
        const throughput = spec.id === 'w7a-shared-prefix' ? round(throughputAtLimit(topology, workload, policy, seed, options.searchSteps), 1) : null;
        perPolicy[pi]?.push({ seed, ...measurePrefix(runPrefixOnce(topology, workload, policy, seed, rate), throughput) });
        options.onProgress?.(`${spec.id} ${policy.id} seed ${seed}`);
      });
    }
    return {
      workload: spec.id,
      label: spec.label,
      ratePerS: rate,
      copies: topology.pipelines.length,
      policies: policies.map((policy, pi) => policyResult(policy, perPolicy[pi] ?? [])),
    };
  });
  return { seeds, scale, ttftLimitMs: TTFT_LIMIT_MS, timeoutMs: CLIENT_TIMEOUT_MS, workloads, targets: prefixTargets(workloads) };
}

/** One policy's runs, rounded, and their medians (the throughput's when measured). */
export function policyResult(policy: PrefixPolicy, runs: readonly (PrefixRunMetrics & { readonly seed: number })[]): PrefixPolicyResult {
  const med = (f: (m: PrefixRunMetrics) => number, digits = 2) => round(median(runs.map(f)), digits);
  const throughputs = runs.map((m) => m.throughput).filter((x): x is number => x !== null);
  return {
    policy: policy.id,
    label: policy.label,
    oracle: policy.oracle === true,
    median: { p50: med((m) => m.p50), p99: med((m) => m.p99), mean: med((m) => m.mean), hitRate: med((m) => m.hitRate, 4), success: med((m) => m.success, 4), throughput: throughputs.length > 0 ? round(median(throughputs), 1) : null },
    runs: runs.map((m) => ({ ...m, p50: round(m.p50, 2), p99: round(m.p99, 2), mean: round(m.mean, 2), hitRate: round(m.hitRate, 4), success: round(m.success, 4) })),
  };
}

/** The W7 targets against the medians (those whose policies were run). */
export function prefixTargets(workloads: readonly PrefixWorkloadResult[]): PrefixTarget[] {
  const out: PrefixTarget[] = [];
  const get = (w: string, p: string) => workloads.find((x) => x.workload === w)?.policies.find((x) => x.policy === p)?.median;
  const ratio = (a: number | null | undefined, b: number | null | undefined) => (a == null || b == null || b === 0 ? null : round(a / b, 3));
  const push = (workload: string, target: string, value: number | null, limit: number, atLeast: boolean, oracle: number | null) => {
    if (value === null) return;
    out.push({ workload, target, value, limit, pass: atLeast ? value >= limit : value <= limit, oracle });
  };
  const a = 'w7a-shared-prefix';
  const ours = get(a, 'ours');
  const oracle = get(a, 'oracle-cache');
  const field = ['sglang-cache-aware', 'gie-scorers', 'dynamo-kv'].map((p) => get(a, p)?.throughput ?? null).filter((x): x is number => x !== null);
  const bestField = field.length > 0 ? Math.max(...field) : null;
  push(a, 'throughput at p99 TTFT limit ≥ 1.9 × round-robin', ratio(ours?.throughput, get(a, 'round-robin')?.throughput), 1.9, true, ratio(oracle?.throughput, get(a, 'round-robin')?.throughput));
  push(a, 'throughput at p99 TTFT limit ≥ 1.0 × best of SGLang / GIE / Dynamo', ratio(ours?.throughput, bestField), 1.0, true, ratio(oracle?.throughput, bestField));
  push(a, 'mean TTFT ≤ 0.5 × cache-blind', ratio(ours?.mean, get(a, 'cache-blind')?.mean), 0.5, false, ratio(oracle?.mean, get(a, 'cache-blind')?.mean));
  const b = 'w7b-multi-turn';
  push(b, 'hit rate ≥ 0.9 × oracle', ratio(get(b, 'ours')?.hitRate, get(b, 'oracle-cache')?.hitRate), 0.9, true, null);
  const c = 'w7c-little-sharing';
  push(c, 'p50 TTFT ≤ round-robin', ratio(get(c, 'ours')?.p50, get(c, 'round-robin')?.p50), 1.0, false, ratio(get(c, 'oracle-cache')?.p50, get(c, 'round-robin')?.p50));
  const d = 'w7d-skew';
  push(d, '≥ 99% succeed within the client timeout', get(d, 'ours')?.success ?? null, 0.99, true, get(d, 'oracle-cache')?.success ?? null);
  return out;
}

/** The W7 table, Markdown. */
export function prefixTable(result: PrefixSimResult): string {
  const lines: string[] = [];
  for (const w of result.workloads) {
    lines.push(`### ${w.label} (${w.copies} copies, ${w.ratePerS} req/s)`, '', '| policy | throughput at p99 TTFT ≤ ' + result.ttftLimitMs + ' ms (req/s) | p50 TTFT (ms) | p99 TTFT (ms) | mean TTFT (ms) | hit rate | succeed ≤ ' + result.timeoutMs / 1000 + ' s |', '|---|---|---|---|---|---|---|');
    for (const p of w.policies) {
      const m = p.median;
      lines.push(`| ${p.policy}${p.oracle ? ' (reference)' : ''} | ${m.throughput ?? '–'} | ${m.p50} | ${m.p99} | ${m.mean} | ${m.hitRate.toFixed(3)} | ${(m.success * 100).toFixed(1)}% |`);
    }
    lines.push('');
  }
  lines.push('| workload | target | ours | limit | oracle | |', '|---|---|---|---|---|---|');
  for (const t of result.targets) lines.push(`| ${t.workload} | ${t.target} | ${t.value} | ${t.limit} | ${t.oracle ?? '–'} | ${t.pass ? 'pass' : '**FAIL**'} |`);
  return lines.join('\n');
}
