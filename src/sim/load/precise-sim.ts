/**
 * Precise mode's hit rates (docs/prefix-cache.md, "Precise mode"): on H1, H2 and W7a–d at their
 * reference rates, the prompt tokens found cached over the prompt tokens, for the oracle (our rule
 * with exact caches, queued prompts counted), ours estimated, and ours fed by the first stages'
 * KV events every 100 ms and at once. Medians over seeds; the ratios to the oracle's. Pure.
 */
import { HELDOUT_WORKLOADS, heldoutTopology } from './heldout-workloads.js';
import { buildTopology, type BuiltTopology } from './load-topology.js';
import { W7_TOPOLOGY, W7C_TOPOLOGY } from './prefix-constants.js';
import { oracleCache } from './prefix-policies.js';
import type { PrefixPolicy } from './prefix-router.js';
import { measurePrefix, runPrefixOnce, W7_RATES } from './prefix-sim.js';
import { oursPrecise, oursPreciseNow, oursPrefix, oursReplicas } from './prefix-swarm-policy.js';
import { PREFIX_WORKLOADS, type PrefixWorkload } from './prefix-workloads.js';
import { median, round } from './run.js';

/** The policies compared, in report order. */
export const PRECISE_POLICIES: readonly PrefixPolicy[] = [oracleCache, oursPrefix, oursPrecise, oursPreciseNow];

/** One workload's median hit rate per policy, and each one's ratio to the oracle's. */
export interface PreciseRow {
  readonly workload: string;
  readonly hitRates: Readonly<Record<string, number>>;
  readonly ofOracle: Readonly<Record<string, number>>;
}

/** A workload as this comparison runs it: its topology, its requests for a seed, its rate. */
interface Case {
  readonly id: string;
  readonly topology: BuiltTopology;
  readonly rate: number;
  build(seed: number): PrefixWorkload;
}

/** Every workload of H1, H2, W7a–d (or those named), at `scale`. */
export function preciseCases(scale: number, only?: readonly string[]): Case[] {
  const main = buildTopology(W7_TOPOLOGY);
  const two = buildTopology(W7C_TOPOLOGY);
  const cases: Case[] = [];
  for (const spec of HELDOUT_WORKLOADS) {
    const topology = heldoutTopology(spec);
    const rate = spec.ratePerS(topology);
    cases.push({ id: spec.id, topology, rate, build: (seed) => spec.build(seed, rate, scale) });
  }
  for (const spec of PREFIX_WORKLOADS) cases.push({ id: spec.id, topology: spec.id === 'w7c-little-sharing' ? two : main, rate: W7_RATES[spec.id], build: (seed) => spec.build(seed, scale) });
  return cases.filter((c) => only === undefined || only.some((o) => c.id.startsWith(o)));
}

/** Runs `policies` on every case over `seeds`. */
export function runPreciseHitRates(seeds: readonly number[], scale = 1, only?: readonly string[], policies: readonly PrefixPolicy[] = PRECISE_POLICIES): PreciseRow[] {
  return preciseCases(scale, only).map((c) => {
    const rates = policies.map(() => [] as number[]);
    for (const seed of seeds) {
      const workload = c.build(seed);
      policies.forEach((p, i) => rates[i]?.push(measurePrefix(runPrefixOnce(c.topology, workload, p, seed, c.rate)).hitRate));
    }
    const hitRates: Record<string, number> = {};
    policies.forEach((p, i) => (hitRates[p.id] = round(median(rates[i] ?? []), 4)));
    const oracle = hitRates[oracleCache.id] ?? 0;
    const ofOracle: Record<string, number> = {};
    for (const p of policies) ofOracle[p.id] = oracle > 0 ? round((hitRates[p.id] ?? 0) / oracle, 3) : 0;
    return { workload: c.id, hitRates, ofOracle };
  });
}

/** The rows as Markdown: each policy's hit rate (÷ the oracle's). */
export function preciseTable(rows: readonly PreciseRow[], policies: readonly PrefixPolicy[] = PRECISE_POLICIES): string {
  const lines = [`| workload | ${policies.map((p) => p.id).join(' | ')} |`, `|---|${policies.map(() => '--:').join('|')}|`];
  for (const r of rows) lines.push(`| ${r.workload} | ${policies.map((p) => `${(r.hitRates[p.id] ?? 0).toFixed(3)} (${(r.ofOracle[p.id] ?? 0).toFixed(3)})`).join(' | ')} |`);
  return lines.join('\n');
}

/** W7a through 1, 2 and 4 replicas (or `counts`), each estimating and sharing precise reports, with the oracle for reference. */
export function replicaPolicies(counts: readonly number[] = [1, 2, 4]): PrefixPolicy[] {
  return [oracleCache, ...counts.flatMap((n) => [oursReplicas(n, false), oursReplicas(n, true)])];
}
