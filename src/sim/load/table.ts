/** The results as a Markdown table: one row per workload × policy, then the targets. */
import type { LoadSimResult } from './run.js';
import { missNote, targetVerdict } from './targets.js';

const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const pct = (x: number): string => (x === 0 ? '0' : `${(x * 100).toFixed(x < 0.001 ? 3 : 2)}%`);

/**
 * A Markdown report of the medians: latency percentiles, errors, timeouts, requests sent to the
 * dead node, herd index, and the targets: pass, known miss or **FAIL**.
 */
export function resultsTable(result: LoadSimResult): string {
  const lines: string[] = [];
  lines.push(`Medians over ${result.seeds.length} seed${result.seeds.length === 1 ? '' : 's'} (${result.seeds[0]}…${result.seeds[result.seeds.length - 1]}), ${result.requestsPerRun} requests per run, latency in ms.`);
  lines.push('');
  lines.push('| workload | policy | p50 | p99 | p99.9 | errors | timeouts | to dead node | herd index | p99 / P2C+peak-EWMA |');
  lines.push('|---|---|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const w of result.workloads) {
    const base = w.policies.find((p) => p.policy === 'p2c-peak-ewma')?.median.p99;
    for (const p of w.policies) {
      const m = p.median;
      const name = p.oracle ? `_${p.policy}_` : p.policy === 'ours-reserve' ? `**${p.policy}**` : p.policy;
      lines.push(
        `| ${w.workload} | ${name} | ${fmt(m.p50)} | ${fmt(m.p99)} | ${fmt(m.p999)} | ${pct(m.errorRate)} | ${pct(m.timeoutRate)} | ${w.deadNode === null ? '–' : m.deadSent} | ${m.herdIndex === null ? '–' : m.herdIndex.toFixed(3)} | ${base ? (m.p99 / base).toFixed(2) : '–'} |`,
      );
    }
  }
  lines.push('');
  lines.push('| target | workload | ours | P2C+peak-EWMA | ratio | limit | result | _oracle-sed_ | ours-latency-weights |');
  lines.push('|---|---|--:|--:|--:|--:|---|--:|--:|');
  for (const t of result.targets) {
    lines.push(
      `| ${t.target} | ${t.workload} | ${t.ours} | ${t.baseline ?? '–'} | ${t.ratio ?? '–'} | ${t.limit} | ${targetVerdict(t)} | ${t.oracle ?? '–'} | ${t.latencyWeights ?? '–'} |`,
    );
  }
  const notes = result.targets.flatMap((t) => missNote(t) ?? []);
  if (notes.length > 0) lines.push('', ...notes);
  lines.push('');
  lines.push('The targets judge ours (default weights). The last two columns give the same measure (the p99 ratio, the dead-node requests or the herd index) for the oracle, which reads every queue at once (the strongest reference here, though greedy, so not a strict bound), and for the measured-latency-weights experiment; neither is judged.');
  return `${lines.join('\n')}\n`;
}

/** Each copy's traffic share against its capacity share, per workload and policy. */
export function sharesTable(result: LoadSimResult): string {
  const ids = result.topology.pipelines.map((p) => p.id);
  const lines = [`| workload | policy | ${ids.map((id) => `${id} traffic / capacity`).join(' | ')} |`, `|---|---|${ids.map(() => '--:').join('|')}|`];
  for (const w of result.workloads) {
    for (const p of w.policies) {
      lines.push(`| ${w.workload} | ${p.policy} | ${p.median.shares.map((s) => `${(s.traffic * 100).toFixed(1)}% / ${(s.capacity * 100).toFixed(1)}%`).join(' | ')} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}
