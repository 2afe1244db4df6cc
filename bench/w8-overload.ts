/**
 * W8, overload (docs/admission.md, "Measured: W8"): arrivals at 150% of the swarm's capacity in
 * three classes (critical 10%, standard 60%, sheddable 30%) with deadlines, through the real
 * `swarm.admit`, against no admission (today) and one FIFO queue; medians over 10 seeds; and the
 * same at 80% load, where admission must cost nothing. Writes nothing. Run after
 * `npm run build:bench`: `node dist-bench/bench/w8-overload.js [seeds] [requests]`.
 */
import { OVERLOAD_POLICIES, runOverload, W8_ADMISSION, W8_CLASSES, type OverloadResult } from '../src/sim/load/overload-sim.js';

const seeds = Number(process.argv[2] ?? 10);
const requests = Number(process.argv[3] ?? 4000);
const started = performance.now();

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const inf = (x: number | null): number => (x === null ? Infinity : x);
const show = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : '> deadline');

async function runs(rho: number): Promise<Map<string, OverloadResult[]>> {
  const out = new Map<string, OverloadResult[]>();
  for (const policy of OVERLOAD_POLICIES) {
    const rs: OverloadResult[] = [];
    for (let seed = 1; seed <= seeds; seed++) rs.push(await runOverload({ policy, rho, requests, seed }));
    out.set(policy, rs);
  }
  return out;
}

const shares = W8_ADMISSION.shares ?? {};
const over = await runs(1.5);
console.log(`W8 overload: ρ = 1.5, ${requests} requests × ${seeds} seeds, medians. Classes: ${W8_CLASSES.map((c) => `${c.name} ${c.share * 100}% (priority ${c.priority}, deadline ${c.deadlineMs} ms${shares[String(c.priority)] !== undefined ? `, share ${shares[String(c.priority)]}` : ''})`).join(', ')}. Ours: ${JSON.stringify(W8_ADMISSION)}.`);
console.log('');
console.log(`| policy | goodput ÷ capacity | ${W8_CLASSES.map((c) => `${c.name} good ÷ capacity | ${c.name} p99 ms`).join(' | ')} | refused (queue full / shed, deadline) | most queued |`);
console.log(`|---|--:|${W8_CLASSES.map(() => '--:|--:').join('|')}|--:|--:|`);
const rows: Record<string, Record<string, number>> = {};
for (const [policy, rs] of over) {
  const row: Record<string, number> = { goodput: median(rs.map((r) => r.goodput)), maxQueued: Math.max(...rs.map((r) => r.maxQueued)) };
  const cells = W8_CLASSES.map((c, k) => {
    const share = median(rs.map((r) => (r.classes[k] as OverloadResult['classes'][number]).goodputShare));
    const p99 = median(rs.map((r) => inf((r.classes[k] as OverloadResult['classes'][number]).p99Ms)));
    row[`${c.name}.share`] = share;
    row[`${c.name}.p99`] = p99;
    return `${share.toFixed(3)} | ${show(p99)}`;
  });
  const sat = median(rs.map((r) => r.classes.reduce((s, c) => s + c.saturated, 0)));
  const dl = median(rs.map((r) => r.classes.reduce((s, c) => s + c.deadline, 0)));
  rows[policy] = row;
  console.log(`| ${policy} | ${row['goodput']?.toFixed(3)} | ${cells.join(' | ')} | ${sat} / ${dl} | ${row['maxQueued']} |`);
}

const low = await runs(0.8);
console.log('');
console.log(`At ρ = 0.8 (no overload): p99 of the finished requests, ms, and goodput ÷ capacity, medians.`);
console.log('');
console.log('| policy | p99 ms | p99 ÷ none | goodput ÷ capacity |');
console.log('|---|--:|--:|--:|');
const p99None = median((low.get('none') ?? []).map((r) => r.p99DoneMs));
for (const [policy, rs] of low) {
  const p99 = median(rs.map((r) => r.p99DoneMs));
  console.log(`| ${policy} | ${p99.toFixed(1)} | ${(p99 / p99None).toFixed(3)} | ${median(rs.map((r) => r.goodput)).toFixed(3)} |`);
}

// The targets (docs/admission.md).
const ours = rows['ours'] as Record<string, number>;
const none = rows['none'] as Record<string, number>;
const critical = W8_CLASSES[0] as (typeof W8_CLASSES)[number];
const oursLow = median((low.get('ours') ?? []).map((r) => r.p99DoneMs));
const targets: [string, boolean, string][] = [
  ['ours: goodput ≥ 0.9 of capacity', (ours['goodput'] ?? 0) >= 0.9, `${ours['goodput']?.toFixed(3)} (none: ${none['goodput']?.toFixed(3)})`],
  [`ours: critical p99 ≤ its deadline (${critical.deadlineMs} ms)`, (ours['critical.p99'] ?? Infinity) <= critical.deadlineMs, `${show(ours['critical.p99'] ?? Infinity)} ms`],
  ...W8_CLASSES.filter((c) => shares[String(c.priority)] !== undefined).map((c): [string, boolean, string] => {
    const share = shares[String(c.priority)] as number;
    return [`ours: ${c.name} finishes ≥ 0.9 of its share (${share})`, (ours[`${c.name}.share`] ?? 0) >= 0.9 * share, `${ours[`${c.name}.share`]?.toFixed(3)} of capacity`];
  }),
  [`queue memory bounded: most queued ≤ queueSize (${W8_ADMISSION.queueSize})`, Math.max(rows['ours']?.['maxQueued'] ?? 0, rows['fifo']?.['maxQueued'] ?? 0) <= (W8_ADMISSION.queueSize ?? 1024), `${Math.max(rows['ours']?.['maxQueued'] ?? 0, rows['fifo']?.['maxQueued'] ?? 0)}`],
  ['ρ = 0.8: ours p99 within 5% of none', oursLow <= 1.05 * p99None, `${oursLow.toFixed(1)} vs ${p99None.toFixed(1)} ms (×${(oursLow / p99None).toFixed(3)})`],
];
console.log('');
for (const [name, pass, value] of targets) console.log(`${pass ? 'pass' : 'MISS'}  ${name}: ${value}`);
console.log(`(${((performance.now() - started) / 1000).toFixed(1)} s)`);
