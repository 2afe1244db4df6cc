/**
 * The load simulation's targets (docs/performance.md), checked against the medians: ours against P2C + peak-EWMA, the strongest
 * baseline users would pick.
 */
import type { PolicyResult, WorkloadResult } from './run.js';

/** One target and whether the measured medians meet it. */
export interface TargetResult {
  readonly target: string;
  readonly workload: string;
  /** Our median, and the baseline's (or the absolute limit's basis). */
  readonly ours: number;
  readonly baseline: number | null;
  /** ours / baseline for ratio targets. */
  readonly ratio: number | null;
  readonly limit: number;
  readonly pass: boolean;
  /**
   * The same measure for the references, for reading a miss: the oracle (greedy shortest
   * expected delay with perfect, instant knowledge of every queue; when it misses the limit too,
   * better information alone will not meet the target) and ours with measured-latency weights
   * (the experiment). Null when not run.
   */
  readonly oracle: number | null;
  readonly latencyWeights: number | null;
}

/**
 * The targets docs/performance.md reports as missed on this swarm, by workload and limit, with why
 * in a few words: the table says "known miss" in the row and prints the reason under it, so a
 * reader of the output alone knows a missed row is the documented state, not a broken run.
 */
const KNOWN_MISSES: ReadonlyMap<string, string> = new Map([
  ['w1-rho0.7 0.7', 'since the layer-aware cost, ours sits on the 0.70 × P2C+peak-EWMA line on this swarm, just above it on most seeds; read docs/performance.md, "Load spreading"'],
  ['w2-bursty 0.7', 'no router that does not know request sizes reaches 0.70 on these bursts, not even the oracle reading every queue; read docs/performance.md, "Load spreading"'],
]);

/** The result column of a target: `pass`, `known miss` (documented in docs/performance.md) or `**FAIL**` (a miss nobody documented). */
export function targetVerdict(t: TargetResult): 'pass' | 'known miss' | '**FAIL**' {
  if (t.pass) return 'pass';
  return KNOWN_MISSES.has(`${t.workload} ${t.limit}`) ? 'known miss' : '**FAIL**';
}

/**
 * One line on a missed target: the documented reason and where to read it, or that the miss is
 * not documented (a regression to look into). Undefined for a target that is met.
 */
export function missNote(t: TargetResult): string | undefined {
  if (t.pass) return undefined;
  const known = KNOWN_MISSES.get(`${t.workload} ${t.limit}`);
  if (known !== undefined) return `Known miss on ${t.workload}: ${known}.`;
  return `FAIL on ${t.workload} (${t.target}) is not a documented miss: compare with docs/performance.md, "Load spreading".`;
}

const OURS = 'ours-reserve';
const BASELINE = 'p2c-peak-ewma';
const ORACLE = 'oracle-sed';
const LATENCY_WEIGHTS = 'ours-latency-weights';
/** Ours finding failures itself (detector + ejection, no health reports), judged on W4 too. */
const DETECT = 'ours-detect';

function find(w: WorkloadResult, policy: string): PolicyResult | undefined {
  return w.policies.find((p) => p.policy === policy);
}

/** Every target whose workload and policies were run. */
export function evaluateTargets(workloads: readonly WorkloadResult[], copies: number): TargetResult[] {
  const out: TargetResult[] = [];
  const ratio = (id: string, limit: number, text: string) => {
    const w = workloads.find((x) => x.workload === id);
    const ours = w && find(w, OURS);
    const base = w && find(w, BASELINE);
    if (!ours || !base) return;
    const r = base.median.p99 > 0 ? ours.median.p99 / base.median.p99 : Infinity;
    const rel = (policy: string): number | null => {
      const p = find(w, policy);
      return p === undefined || !(base.median.p99 > 0) ? null : Math.round((p.median.p99 / base.median.p99) * 1000) / 1000;
    };
    out.push({ target: text, workload: id, ours: ours.median.p99, baseline: base.median.p99, ratio: Math.round(r * 1000) / 1000, limit, pass: r <= limit, oracle: rel(ORACLE), latencyWeights: rel(LATENCY_WEIGHTS) });
  };
  ratio('w1-rho0.7', 0.7, 'p99 ≤ 0.70 × P2C+peak-EWMA p99');
  ratio('w2-bursty', 0.7, 'p99 ≤ 0.70 × P2C+peak-EWMA p99');
  ratio('w3-slowdown', 1.1, 'p99 ≤ 1.1 × P2C+peak-EWMA p99');
  for (const id of ['w4-black-hole', 'w4-fail-fast']) {
    const w = workloads.find((x) => x.workload === id);
    const ours = w && find(w, OURS);
    const base = w && find(w, BASELINE);
    if (!w || !base) continue;
    // The dead-node target, judged for ours and again for ours with the detector instead of an oracle.
    const deadTarget = (policy: typeof ours, target: string) => {
      if (policy === undefined) return;
      out.push({
        target,
        workload: id,
        ours: policy.median.deadSent,
        baseline: base.median.deadSent,
        ratio: null,
        limit: base.median.deadSent,
        pass: policy.median.deadSent <= base.median.deadSent,
        oracle: find(w, ORACLE)?.median.deadSent ?? null,
        latencyWeights: find(w, LATENCY_WEIGHTS)?.median.deadSent ?? null,
      });
    };
    deadTarget(ours, 'requests to the dead node ≤ P2C+peak-EWMA');
    deadTarget(find(w, DETECT), 'requests to the dead node ≤ P2C+peak-EWMA, found by the detector and ejection (ours-detect)');
  }
  const w2 = workloads.find((x) => x.workload === 'w2-bursty');
  const herd = w2 && find(w2, OURS)?.median.herdIndex;
  if (w2 && typeof herd === 'number') {
    const limit = Math.round((2 / copies) * 10000) / 10000;
    const other = (policy: string): number | null => find(w2, policy)?.median.herdIndex ?? null;
    out.push({ target: `herd index ≤ 2/N = ${limit}`, workload: 'w2-bursty', ours: herd, baseline: null, ratio: null, limit, pass: herd <= limit, oracle: other(ORACLE), latencyWeights: other(LATENCY_WEIGHTS) });
  }
  ratio('w5-four-routers', 1.0, 'p99 ≤ 1.0 × P2C+peak-EWMA p99 (four routers, own leases only)');
  return out;
}
