/**
 * What a run measured: latency percentiles, error and timeout rates, requests sent to a dead
 * node, the herd index of flash bursts, and each copy's traffic share against its capacity.
 */
import { OUTCOME, type EngineTrace } from './engine.js';
import type { BuiltTopology } from './load-topology.js';
import type { Workload } from './workloads.js';

/** One copy's share of the traffic against its share of the capacity. */
export interface CopyShare {
  readonly pipelineId: string;
  readonly traffic: number;
  readonly capacity: number;
}

/** The summary of one run (one workload, one policy, one seed). Plain data. */
export interface RunMetrics {
  readonly requests: number;
  /** Latency percentiles over completed requests and timeouts (a timeout counts as the timeout), ms. */
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly mean: number;
  /** Share of requests that failed (an error response, or no live copy to send to). */
  readonly errorRate: number;
  readonly timeoutRate: number;
  /** Requests routed onto a node that was already dead. */
  readonly deadSent: number;
  /** Mean over flash bursts of the largest share of one burst on one copy (ideal 1/N); null without bursts. */
  readonly herdIndex: number | null;
  readonly shares: readonly CopyShare[];
  /** Latency at each probability of {@link CDF_LEVELS}, ms. */
  readonly cdf: readonly number[];
}

/**
 * Probabilities the CDF is sampled at: evenly spaced in "nines" (−log10(1 − p) from 0 to 3), so
 * the tail up to p99.9 gets as much room as the body.
 */
export const CDF_LEVELS: readonly number[] = Array.from({ length: 61 }, (_, i) => 1 - 10 ** (-i / 20));

/** The value at probability `p` of a sorted array (nearest rank). */
export function quantile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(Math.max(Math.ceil(p * sorted.length), 1), sorted.length);
  return sorted[rank - 1] as number;
}

/** Summarises one engine trace. */
export function measure(trace: EngineTrace, workload: Workload, topology: BuiltTopology): RunMetrics {
  const n = trace.outcome.length;
  const kept: number[] = [];
  let errors = 0;
  let timeouts = 0;
  let deadSent = 0;
  const perCopy = topology.pipelines.map(() => 0);
  for (let i = 0; i < n; i++) {
    const o = trace.outcome[i];
    if (o === OUTCOME.ok || o === OUTCOME.timeout) kept.push(trace.latency[i] as number);
    if (o === OUTCOME.timeout) timeouts++;
    if (o === OUTCOME.error || o === OUTCOME.unroutable) errors++;
    deadSent += trace.sentToDead[i] as number;
    const p = trace.pipeline[i] as number;
    if (p >= 0) perCopy[p] = (perCopy[p] ?? 0) + 1;
  }
  const sorted = Float64Array.from(kept).sort();
  const routed = perCopy.reduce((s, x) => s + x, 0) || 1;
  const shares = topology.pipelines.map((p) => ({ pipelineId: p.id, traffic: (perCopy[p.index] ?? 0) / routed, capacity: p.capacity / topology.capacity }));
  return {
    requests: n,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    p999: quantile(sorted, 0.999),
    mean: kept.length === 0 ? 0 : kept.reduce((s, x) => s + x, 0) / kept.length,
    errorRate: errors / (n || 1),
    timeoutRate: timeouts / (n || 1),
    deadSent,
    herdIndex: herdIndex(trace, workload, topology.pipelines.length),
    shares,
    cdf: CDF_LEVELS.map((p) => quantile(sorted, p)),
  };
}

/** Mean over flash bursts of the largest share of a burst that landed on one copy. */
export function herdIndex(trace: EngineTrace, workload: Workload, copies: number): number | null {
  if (workload.bursts === 0) return null;
  const counts = new Int32Array(workload.bursts * copies);
  const sizes = new Int32Array(workload.bursts);
  workload.arrivals.forEach((a, i) => {
    if (a.burst < 0) return;
    sizes[a.burst] = (sizes[a.burst] ?? 0) + 1;
    const p = trace.pipeline[i] as number;
    if (p >= 0) counts[a.burst * copies + p] = (counts[a.burst * copies + p] ?? 0) + 1;
  });
  let sum = 0;
  for (let b = 0; b < workload.bursts; b++) {
    let max = 0;
    for (let c = 0; c < copies; c++) max = Math.max(max, counts[b * copies + c] as number);
    sum += max / ((sizes[b] as number) || 1);
  }
  return sum / workload.bursts;
}
