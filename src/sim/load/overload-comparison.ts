/**
 * W8's comparison (docs/admission.md, "Measured: W8"): {@link runOverload} for every policy (none,
 * one FIFO queue, ours) at 150% load and at 80%, over seeds, reduced to medians and checked against
 * the targets. Shared by `hecate-node load-sim --workload w8` and bench/w8-overload.ts. Plain data.
 */
import { OVERLOAD_POLICIES, runOverload, W8_ADMISSION, W8_CLASSES, type OverloadClass, type OverloadPolicy, type OverloadResult } from './overload-sim.js';
import { median } from './run.js';

/** W8's id in `load-sim --workload`. */
export const W8_ID = 'w8-overload';
/** W8's default requests per run (the measured configuration of docs/admission.md). */
export const W8_DEFAULT_REQUESTS = 4000;
/** The overloaded load, arrivals ÷ capacity. */
export const W8_RHO = 1.5;
/** The light load at which admission must cost nothing. */
export const W8_LIGHT_RHO = 0.8;

/** One policy at 150% load, medians over the seeds (unrounded: the tables round). */
export interface OverloadRow {
  readonly policy: OverloadPolicy;
  /** Goodput ÷ capacity. */
  readonly goodput: number;
  /** Per class: goodput ÷ capacity and p99 latency, ms (null: past its deadline). */
  readonly classes: readonly { readonly name: string; readonly goodputShare: number; readonly p99Ms: number | null }[];
  /** Refused: queue full or shed, and past the deadline while queued. */
  readonly saturated: number;
  readonly deadline: number;
  /** Most queued at once, over every seed. */
  readonly maxQueued: number;
}

/** One policy at 80% load, medians over the seeds. */
export interface LightRow {
  readonly policy: OverloadPolicy;
  readonly p99Ms: number;
  /** p99 ÷ none's p99. */
  readonly p99VsNone: number;
  readonly goodput: number;
}

/** One target and whether the medians meet it. */
export interface OverloadTarget {
  readonly target: string;
  readonly value: string;
  readonly pass: boolean;
}

/** The whole W8 comparison. Plain data: the same options give the same bytes. */
export interface OverloadComparison {
  readonly workload: typeof W8_ID;
  readonly seeds: readonly number[];
  readonly requestsPerRun: number;
  readonly classes: readonly OverloadClass[];
  readonly admission: typeof W8_ADMISSION;
  readonly rho: number;
  readonly rows: readonly OverloadRow[];
  readonly lightRho: number;
  readonly light: readonly LightRow[];
  readonly targets: readonly OverloadTarget[];
}

/** What to run. */
export interface OverloadComparisonOptions {
  /** @defaultValue 1 */
  readonly seed?: number;
  /** @defaultValue 10 */
  readonly seeds?: number;
  /** @defaultValue {@link W8_DEFAULT_REQUESTS} */
  readonly requests?: number;
  /** Called after each run with runs done, runs in all and what ran. */
  readonly onProgress?: (done: number, total: number, label: string) => void;
}

/** Runs W8: every policy at {@link W8_RHO} and {@link W8_LIGHT_RHO}, each over the seeds. */
export async function runOverloadComparison(options: OverloadComparisonOptions = {}): Promise<OverloadComparison> {
  const first = options.seed ?? 1;
  const seeds = Array.from({ length: options.seeds ?? 10 }, (_, i) => first + i);
  const requests = options.requests ?? W8_DEFAULT_REQUESTS;
  const total = 2 * OVERLOAD_POLICIES.length * seeds.length;
  let done = 0;
  const runs = async (rho: number): Promise<Map<OverloadPolicy, OverloadResult[]>> => {
    const out = new Map<OverloadPolicy, OverloadResult[]>();
    for (const policy of OVERLOAD_POLICIES) {
      const rs: OverloadResult[] = [];
      for (const seed of seeds) {
        rs.push(await runOverload({ policy, rho, requests, seed }));
        options.onProgress?.(++done, total, `${W8_ID} ρ=${rho} ${policy} seed ${seed}`);
      }
      out.set(policy, rs);
    }
    return out;
  };
  const over = await runs(W8_RHO);
  const rows = [...over].map(([policy, rs]): OverloadRow => ({
    policy,
    goodput: median(rs.map((r) => r.goodput)),
    classes: W8_CLASSES.map((c, k) => {
      const of = (r: OverloadResult) => r.classes[k] as OverloadResult['classes'][number];
      const p99 = median(rs.map((r) => of(r).p99Ms ?? Infinity));
      return { name: c.name, goodputShare: median(rs.map((r) => of(r).goodputShare)), p99Ms: Number.isFinite(p99) ? p99 : null };
    }),
    saturated: median(rs.map((r) => r.classes.reduce((s, c) => s + c.saturated, 0))),
    deadline: median(rs.map((r) => r.classes.reduce((s, c) => s + c.deadline, 0))),
    maxQueued: Math.max(...rs.map((r) => r.maxQueued)),
  }));
  const low = await runs(W8_LIGHT_RHO);
  const p99None = median((low.get('none') ?? []).map((r) => r.p99DoneMs));
  const light = [...low].map(([policy, rs]): LightRow => {
    const p99 = median(rs.map((r) => r.p99DoneMs));
    return { policy, p99Ms: p99, p99VsNone: p99 / p99None, goodput: median(rs.map((r) => r.goodput)) };
  });
  return { workload: W8_ID, seeds, requestsPerRun: requests, classes: W8_CLASSES, admission: W8_ADMISSION, rho: W8_RHO, rows, lightRho: W8_LIGHT_RHO, light, targets: overloadTargets(rows, light) };
}

/** W8's targets (docs/admission.md) against the medians. */
export function overloadTargets(rows: readonly OverloadRow[], light: readonly LightRow[]): OverloadTarget[] {
  const row = (p: OverloadPolicy) => rows.find((r) => r.policy === p);
  const ours = row('ours');
  const share = (name: string) => ours?.classes.find((c) => c.name === name)?.goodputShare ?? 0;
  const shares = W8_ADMISSION.shares ?? {};
  const critical = W8_CLASSES[0] as OverloadClass;
  const criticalP99 = ours?.classes[0]?.p99Ms ?? null;
  const queued = Math.max(ours?.maxQueued ?? 0, row('fifo')?.maxQueued ?? 0);
  const queueSize = W8_ADMISSION.queueSize ?? 1024;
  const none80 = light.find((r) => r.policy === 'none')?.p99Ms ?? 0;
  const ours80 = light.find((r) => r.policy === 'ours')?.p99Ms ?? Infinity;
  const show = (x: number | null) => (x === null ? '> deadline' : x.toFixed(1));
  return [
    { target: 'ours: goodput ≥ 0.9 of capacity', value: `${(ours?.goodput ?? 0).toFixed(3)} (none: ${(row('none')?.goodput ?? 0).toFixed(3)})`, pass: (ours?.goodput ?? 0) >= 0.9 },
    { target: `ours: critical p99 ≤ its deadline (${critical.deadlineMs} ms)`, value: `${show(criticalP99)} ms`, pass: criticalP99 !== null && criticalP99 <= critical.deadlineMs },
    ...W8_CLASSES.filter((c) => shares[String(c.priority)] !== undefined).map((c): OverloadTarget => {
      const s = shares[String(c.priority)] as number;
      return { target: `ours: ${c.name} finishes ≥ 0.9 of its share (${s})`, value: `${share(c.name).toFixed(3)} of capacity`, pass: share(c.name) >= 0.9 * s };
    }),
    { target: `queue memory bounded: most queued ≤ queueSize (${queueSize})`, value: String(queued), pass: queued <= queueSize },
    { target: `ρ = ${W8_LIGHT_RHO}: ours p99 within 5% of none`, value: `${ours80.toFixed(1)} vs ${none80.toFixed(1)} ms (×${(ours80 / none80).toFixed(3)})`, pass: ours80 <= 1.05 * none80 },
  ];
}

/** The W8 tables and targets, Markdown. */
export function overloadTable(result: OverloadComparison): string {
  const shares = result.admission.shares ?? {};
  const classes = result.classes.map((c) => `${c.name} ${c.share * 100}% (priority ${c.priority}, deadline ${c.deadlineMs} ms${shares[String(c.priority)] !== undefined ? `, share ${shares[String(c.priority)]}` : ''})`);
  const lines = [
    `W8 overload: ρ = ${result.rho}, ${result.requestsPerRun} requests × ${result.seeds.length} seed${result.seeds.length === 1 ? '' : 's'}, medians. Classes: ${classes.join(', ')}. Ours: ${JSON.stringify(result.admission)}.`,
    '',
    `| policy | goodput ÷ capacity | ${result.classes.map((c) => `${c.name} good ÷ capacity | ${c.name} p99 ms`).join(' | ')} | refused (queue full / shed, deadline) | most queued |`,
    `|---|--:|${result.classes.map(() => '--:|--:').join('|')}|--:|--:|`,
  ];
  for (const r of result.rows) {
    const cells = r.classes.map((c) => `${c.goodputShare.toFixed(3)} | ${c.p99Ms === null ? '> deadline' : c.p99Ms.toFixed(1)}`);
    lines.push(`| ${r.policy} | ${r.goodput.toFixed(3)} | ${cells.join(' | ')} | ${r.saturated} / ${r.deadline} | ${r.maxQueued} |`);
  }
  lines.push('', `At ρ = ${result.lightRho} (no overload): p99 of the finished requests, ms, and goodput ÷ capacity, medians.`, '', '| policy | p99 ms | p99 ÷ none | goodput ÷ capacity |', '|---|--:|--:|--:|');
  for (const r of result.light) lines.push(`| ${r.policy} | ${r.p99Ms.toFixed(1)} | ${r.p99VsNone.toFixed(3)} | ${r.goodput.toFixed(3)} |`);
  lines.push('', '| W8 target | value | result |', '|---|---|---|');
  for (const t of result.targets) lines.push(`| ${t.target} | ${t.value} | ${t.pass ? 'pass' : '**FAIL**'} |`);
  return `${lines.join('\n')}\n`;
}
