/**
 * The prefix-routing targets on every workload (docs/prefix-cache.md, "Held-out workloads"): H1
 * and H2 at their own rates, and W7a–d as `runPrefixSim` runs them, through the frozen baselines
 * (round-robin, SGLang, GIE, Dynamo) and ours with `slots` undeclared and declared. Every cell is
 * reported: each workload's p99 TTFT of ours against the best baseline's (≤ 1.1× on H1 and H2,
 * ≤ 1.2× on W7a–d), and W7a's throughput at the p99 limit against SGLang's (≥ 1.0×). Pure.
 */
import { HELDOUT_WORKLOADS, heldoutTopology, type HeldoutSpec } from './heldout-workloads.js';
import { dynamoCost, gieScorers, roundRobin, sglangCacheAware } from './prefix-baselines.js';
import type { PrefixPolicy } from './prefix-router.js';
import { measurePrefix, policyResult, runPrefixOnce, runPrefixSim, type PrefixRunMetrics, type PrefixWorkloadResult } from './prefix-sim.js';
import { oursPrefix, oursSlots } from './prefix-swarm-policy.js';
import type { PrefixWorkloadSpec } from './prefix-workloads.js';
import { round } from './run.js';

/** The baselines a target is measured against. */
export const TARGET_BASELINES: readonly PrefixPolicy[] = [roundRobin, sglangCacheAware, gieScorers, dynamoCost];
/** Ours, `slots` undeclared and declared. */
export const TARGET_OURS: readonly PrefixPolicy[] = [oursPrefix, oursSlots];

/** One cell of the targets: one of ours on one workload's measure. */
export interface TargetCell {
  readonly workload: string;
  readonly policy: string;
  readonly measure: 'p99 TTFT ÷ best baseline' | 'throughput ÷ SGLang';
  /** The baseline compared with (the best's id). */
  readonly against: string;
  readonly value: number;
  readonly limit: number;
  readonly pass: boolean;
}

/** Every workload's medians and every target cell. */
export interface TargetsResult {
  readonly seeds: readonly number[];
  readonly scale: number;
  readonly workloads: readonly PrefixWorkloadResult[];
  readonly cells: readonly TargetCell[];
}

/** What to run. */
export interface TargetsOptions {
  /** @defaultValue 1 */
  readonly seed?: number;
  /** @defaultValue 3 */
  readonly seeds?: number;
  /** Shrinks every workload's request count. @defaultValue 1 */
  readonly scale?: number;
  /** Which workloads (H1, H2, W7a–d ids). @defaultValue all */
  readonly workloads?: readonly string[];
  /** Bisection steps of W7a's throughput search. @defaultValue 8 */
  readonly searchSteps?: number;
  readonly onProgress?: (label: string) => void;
}

/** Runs one held-out workload through `policies`, medians over `seeds`. */
export function runHeldout(spec: HeldoutSpec, policies: readonly PrefixPolicy[], seeds: readonly number[], scale = 1, onProgress?: (label: string) => void): PrefixWorkloadResult {
  const topology = heldoutTopology(spec);
  const rate = spec.ratePerS(topology);
  const perPolicy = policies.map(() => [] as (PrefixRunMetrics & { seed: number })[]);
  for (const seed of seeds) {
    const workload = spec.build(seed, rate, scale);
    policies.forEach((policy, pi) => {
      perPolicy[pi]?.push({ seed, ...measurePrefix(runPrefixOnce(topology, workload, policy, seed, rate)) });
      onProgress?.(`${spec.id} ${policy.id} seed ${seed}`);
    });
  }
  return {
    workload: spec.id,
    label: spec.label,
    ratePerS: round(rate, 1),
    copies: topology.pipelines.length,
    policies: policies.map((policy, pi) => policyResult(policy, perPolicy[pi] ?? [])),
  };
}

/** Runs H1, H2 and W7a–d through the baselines and ours, and checks every cell. */
export function runTargets(options: TargetsOptions = {}): TargetsResult {
  const first = options.seed ?? 1;
  const seeds = Array.from({ length: options.seeds ?? 3 }, (_, i) => first + i);
  const scale = options.scale ?? 1;
  const policies = [...TARGET_BASELINES, ...TARGET_OURS];
  const wanted = (id: string) => options.workloads === undefined || options.workloads.includes(id);
  const held = HELDOUT_WORKLOADS.filter((s) => wanted(s.id)).map((s) => runHeldout(s, policies, seeds, scale, options.onProgress));
  const w7ids = (['w7a-shared-prefix', 'w7b-multi-turn', 'w7c-little-sharing', 'w7d-skew'] as const).filter(wanted) as PrefixWorkloadSpec['id'][];
  const w7 = w7ids.length === 0 ? [] : runPrefixSim({ seed: first, seeds: seeds.length, scale, workloads: w7ids, policies, ...(options.searchSteps !== undefined ? { searchSteps: options.searchSteps } : {}), ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}) }).workloads;
  const workloads = [...held, ...w7];
  return { seeds, scale, workloads, cells: targetCells(workloads) };
}

/** Every cell: ours (each variant) against the best baseline's p99 on each workload; W7a's throughput against SGLang's. */
export function targetCells(workloads: readonly PrefixWorkloadResult[]): TargetCell[] {
  const cells: TargetCell[] = [];
  for (const w of workloads) {
    const baselines = w.policies.filter((p) => TARGET_BASELINES.some((b) => b.id === p.policy));
    if (baselines.length === 0) continue;
    const best = baselines.reduce((a, b) => (b.median.p99 < a.median.p99 ? b : a));
    const limit = w.workload.startsWith('h') ? 1.1 : 1.2;
    const sglang = w.policies.find((p) => p.policy === sglangCacheAware.id)?.median.throughput ?? null;
    for (const ours of w.policies.filter((p) => TARGET_OURS.some((o) => o.id === p.policy))) {
      const value = best.median.p99 === 0 ? 0 : round(ours.median.p99 / best.median.p99, 3);
      cells.push({ workload: w.workload, policy: ours.policy, measure: 'p99 TTFT ÷ best baseline', against: best.policy, value, limit, pass: value <= limit });
      if (sglang !== null && ours.median.throughput !== null && sglang > 0) {
        const t = round(ours.median.throughput / sglang, 3);
        cells.push({ workload: w.workload, policy: ours.policy, measure: 'throughput ÷ SGLang', against: sglangCacheAware.id, value: t, limit: 1, pass: t >= 1 });
      }
    }
  }
  return cells;
}

/** Every workload's medians and every cell, Markdown. */
export function targetsTable(result: TargetsResult): string {
  const lines: string[] = [];
  for (const w of result.workloads) {
    lines.push(`### ${w.label} (${w.copies} copies, ${w.ratePerS} req/s)`, '', '| policy | throughput (req/s) | p50 TTFT (ms) | p99 TTFT (ms) | mean TTFT (ms) | hit rate | succeed |', '|---|---|---|---|---|---|---|');
    for (const p of w.policies) {
      const m = p.median;
      lines.push(`| ${p.policy} | ${m.throughput ?? '–'} | ${m.p50} | ${m.p99} | ${m.mean} | ${m.hitRate.toFixed(3)} | ${(m.success * 100).toFixed(1)}% |`);
    }
    lines.push('');
  }
  lines.push('| workload | ours | measure | against | value | limit | |', '|---|---|---|---|---|---|---|');
  for (const c of result.cells) lines.push(`| ${c.workload} | ${c.policy} | ${c.measure} | ${c.against} | ${c.value} | ${c.measure.startsWith('p99') ? '≤' : '≥'} ${c.limit} | ${c.pass ? 'pass' : '**FAIL**'} |`);
  return lines.join('\n');
}
