/**
 * `npm run bench`: runs every benchmark on the built package — the runtime (routing, telemetry,
 * failures, planning, start/stop, memory), plan quality, failure detection, warm start and the package (bundle size, import time, the library install's packages and size) — prints one table and writes
 * `bench/results.json`. Exit code 0 even when a target is missed: the table and the file say
 * which, by how much; a benchmark that cannot run at all exits 1.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dataPlaneBench } from './data-plane.js';
import { detectionBench } from './detection.js';
import { inputLimitsBench } from './input-limits.js';
import { installSizeBench } from './install-size.js';
import { packageBench } from './package.js';
import { prefixCacheBench } from './prefix-cache.js';
import { rebalanceBench } from './rebalance.js';
import { runtimeBench } from './runtime.js';
import { warmStartBench } from './warm-start.js';
import type { BenchRow } from './types.js';

const results = new URL('../../bench/results.json', import.meta.url);
const planQuality = new URL('./plan-quality.js', import.meta.url);

function fmt(x: number | undefined): string {
  if (x === undefined) return '';
  if (Math.abs(x) >= 1e6) return x.toExponential(2);
  if (Math.abs(x) >= 100) return String(Math.round(x));
  return String(Number(x.toPrecision(3)));
}

/** A plain-text table, one row per measurement. */
export function formatTable(rows: readonly BenchRow[]): string {
  const head = ['name', 'size', 'median', 'unit', 'baseline', 'ratio', 'target', 'pass'];
  const body = rows.map((r) => [r.name, r.size, fmt(r.median), r.unit, r.baselineName === undefined ? '' : `${fmt(r.baseline)} (${r.baselineName})`, fmt(r.ratio), r.target, r.pass ? 'PASS' : 'FAIL']);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 2 || i === 5 ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)].join('\n');
}

const log = (line: string) => console.error(line);
const started = performance.now();
const rows: BenchRow[] = [...(await runtimeBench(log))];
if (existsSync(planQuality)) {
  log('plan quality');
  const mod = (await import(planQuality.href)) as { planQualityBench?: () => Promise<BenchRow[]> };
  if (typeof mod.planQualityBench === 'function') rows.push(...(await mod.planQualityBench()));
}
log('input limits');
rows.push(...inputLimitsBench(log));
log('failure detection');
rows.push(...detectionBench(log));
rows.push(...warmStartBench(log));
rows.push(...prefixCacheBench(log));
log('data plane');
rows.push(...(await dataPlaneBench(log)));
rows.push(...rebalanceBench(log));
rows.push(...(await packageBench(log)));
rows.push(...installSizeBench(log));
const seconds = (performance.now() - started) / 1000;

const environment = {
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  cpu: `${cpus()[0]?.model ?? 'unknown'} x ${cpus().length}`,
  quick: process.env['BENCH_QUICK'] === '1',
  seconds: Math.round(seconds),
};
writeFileSync(results, `${JSON.stringify({ generatedAt: new Date().toISOString(), environment, rows }, null, 2)}\n`);

console.log(formatTable(rows));
const failed = rows.filter((r) => !r.pass);
console.log(`\n${rows.length} rows, ${failed.length} target${failed.length === 1 ? '' : 's'} missed${failed.length > 0 ? `: ${failed.map((r) => `${r.name} @ ${r.size}`).join('; ')}` : ''}. Written to bench/results.json (${Math.round(seconds)} s).`);
