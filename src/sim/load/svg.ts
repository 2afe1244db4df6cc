/**
 * Latency CDF charts as standalone SVG strings: one chart per workload, one line per policy.
 * The y axis is in "nines" (p50, p90, p99, p99.9 evenly spaced) so the tail gets the room; the
 * x axis is logarithmic latency.
 */
import type { LoadSimResult, WorkloadResult } from './run.js';

const COLORS: Readonly<Record<string, string>> = {
  wrr: '#8c8c8c',
  random: '#c7a76c',
  'least-outstanding': '#6a9fd4',
  p2c: '#2b6cb0',
  'p2c-peak-ewma': '#d97706',
  'seed-argmin': '#9b2c2c',
  'ours-reserve': '#15803d',
  'oracle-sed': '#6b21a8',
};

const W = 720;
const H = 420;
const M = { left: 64, right: 210, top: 40, bottom: 48 };

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const nines = (p: number): number => -Math.log10(Math.max(1 - p, 1e-6));

/** The SVG of one workload's latency CDFs (pointwise medians over the seeds). */
export function cdfSvg(workload: WorkloadResult, levels: readonly number[]): string {
  const values = workload.policies.flatMap((p) => p.cdf).filter((v) => v > 0);
  const lo = 10 ** Math.floor(Math.log10(Math.min(...values, 1)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...values, 10)));
  const maxY = nines(levels[levels.length - 1] ?? 0.999);
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const x = (ms: number) => M.left + (pw * (Math.log10(Math.max(ms, lo)) - Math.log10(lo))) / (Math.log10(hi) - Math.log10(lo));
  const y = (p: number) => M.top + ph - (ph * nines(p)) / maxY;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${M.left}" y="22" font-size="14" font-weight="600">${esc(workload.label)}</text>`);
  for (let d = lo; d <= hi * 1.0001; d *= 10) {
    for (const m of [1, 2, 5]) {
      const v = d * m;
      if (v > hi * 1.0001) break;
      const gx = x(v).toFixed(1);
      out.push(`<line x1="${gx}" y1="${M.top}" x2="${gx}" y2="${M.top + ph}" stroke="#e5e7eb"/>`);
      out.push(`<text x="${gx}" y="${M.top + ph + 16}" text-anchor="middle" fill="#374151">${v >= 1 ? v : v.toPrecision(1)}</text>`);
    }
  }
  for (const [p, label] of [[0, 'p0'], [0.5, 'p50'], [0.9, 'p90'], [0.99, 'p99'], [0.999, 'p99.9']] as const) {
    const gy = y(p).toFixed(1);
    out.push(`<line x1="${M.left}" y1="${gy}" x2="${M.left + pw}" y2="${gy}" stroke="#e5e7eb"/>`);
    out.push(`<text x="${M.left - 8}" y="${gy}" text-anchor="end" dominant-baseline="middle" fill="#374151">${label}</text>`);
  }
  out.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#9ca3af"/>`);
  out.push(`<text x="${M.left + pw / 2}" y="${H - 10}" text-anchor="middle" fill="#111827">latency (ms, log scale)</text>`);
  workload.policies.forEach((policy, i) => {
    const color = COLORS[policy.policy] ?? '#000000';
    const points = policy.cdf.map((v, k) => `${x(v).toFixed(1)},${y(levels[k] ?? 0).toFixed(1)}`).join(' ');
    const width = policy.policy === 'ours-reserve' ? 2.5 : 1.5;
    const dash = policy.oracle ? ' stroke-dasharray="5 4"' : '';
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="${width}"${dash} points="${points}"/>`);
    const ly = M.top + 8 + i * 20;
    out.push(`<line x1="${M.left + pw + 14}" y1="${ly}" x2="${M.left + pw + 38}" y2="${ly}" stroke="${color}" stroke-width="${width}"${dash}/>`);
    out.push(`<text x="${M.left + pw + 44}" y="${ly}" dominant-baseline="middle" fill="#111827">${esc(policy.policy)} · p99 ${policy.median.p99.toFixed(0)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/** One SVG per workload, keyed by file name (`cdf-<workload>.svg`). */
export function cdfSvgs(result: LoadSimResult): Record<string, string> {
  const files: Record<string, string> = {};
  for (const w of result.workloads) files[`cdf-${w.workload}.svg`] = cdfSvg(w, result.cdfLevels);
  return files;
}
