/**
 * `swarm-sim --html`: the simulated lifecycle as one self-contained HTML page (inline CSS, one
 * small inline script, no network fetch) that reads at a glance from 6 to 1,000 nodes. The story
 * of the run in one line per step; then one step at a time (`#step=N`): what happened, the copies
 * it touched drawn large, and every copy of every model as one row coloured by model, down and
 * suspect nodes marked by shape as well as colour, with a filter by node id. Pure: data in, a
 * string out. docs/see-it.md describes the page.
 */
import type { NodeProfile } from '../core/types.js';
import { escapeHtml as esc } from './html-escape.js';
import { InputError } from './input-error.js';
import { copyOrder, framesFromReport, nodeOrder, type ReportFrame } from './report-frames.js';
import { densityFor, modelColours, type ReportLayout } from './report-overview.js';
import { htmlReportInputSchema } from './report-schema.js';
import { stepSection } from './report-step.js';
import { REPORT_CSS, REPORT_SCRIPT } from './report-style.js';
import { stepSummary } from './report-text.js';
import type { SwarmSimReport } from './swarm-sim.js';
import { firstIssue } from './topology.js';

export type { ReportFrame } from './report-frames.js';

/** What {@link renderHtmlReport} draws. */
export interface HtmlReportInput {
  /** The document `swarm-sim` prints. */
  readonly report: SwarmSimReport;
  /**
   * The plan and telemetry after each step, in step order (`runSwarmSim`'s `onStep`). Without them
   * every step is drawn on the final plan, with dead nodes worked out from the steps.
   */
  readonly frames?: readonly ReportFrame[];
  /** Profiles of the nodes, for their memory in the node chips. */
  readonly profiles?: readonly NodeProfile[];
  /** @defaultValue `hecate-swarm simulation` */
  readonly title?: string;
}

/**
 * The HTML report of a `swarm-sim` run.
 * @throws {InputError} naming the JSON path when `input` is not shaped as documented.
 * @example writeFileSync('report.html', renderHtmlReport({ report, frames }))
 */
export function renderHtmlReport(input: HtmlReportInput): string {
  if (input === null || typeof input !== 'object') throw new InputError('renderHtmlReport', '$', 'needs { report, frames?, profiles?, title? }');
  const checked = htmlReportInputSchema.safeParse(input);
  if (!checked.success) throw firstIssue(checked.error.issues, 'renderHtmlReport', '$');
  const { report } = input;
  const frames = input.frames !== undefined && input.frames.length === report.steps.length ? input.frames : framesFromReport(report);
  const profiles = input.profiles ?? [];
  const memory = new Map(profiles.map((p) => [p.id, p.memoryGb] as const));
  for (const step of report.steps) if (step.step === 'growth') memory.set(step.added.id, step.added.memoryGb);
  const copies = copyOrder(frames.length > 0 ? frames : [{ plan: report.plan, nodes: {} }]);
  const layers = new Map<string, number>();
  for (const frame of frames) for (const m of frame.plan.models) layers.set(m.id, m.layers);
  const layout: ReportLayout = { copies, colours: modelColours([...new Set(copies.map((c) => c.modelId))]), layers, density: densityFor(copies.length) };
  const ctx = { report, layout, memory, nodes: nodeOrder(frames, [...profiles, ...report.steps.flatMap((s) => (s.step === 'growth' ? [s.added] : []))]) };
  const title = input.title ?? 'hecate-swarm simulation';
  const sections = report.steps.map((step, i) => stepSection(i, step, frames[i] as ReportFrame, ctx));
  const story = report.steps.map((step, i) => {
    const [headline, detail] = stepSummary(step, report);
    const text = `${i + 1}. ${step.step} · ${step.status} · ${headline}${detail === undefined ? '' : ` · ${detail}`}`;
    return `<li><a href="#step=${i + 1}" data-to="${i + 1}">${esc(text)}</a></li>`;
  });
  const tabs = report.steps.map((step, i) => `<a href="#step=${i + 1}" data-to="${i + 1}" title="${esc(step.status)}">${i + 1} ${esc(step.step)}</a>`);
  // Counted as step 1 counts them, then what the run added: "6 planned + 1 new", never a bare 7.
  const joined = report.steps.flatMap((s) => (s.step === 'growth' ? [s.added.id] : [])).filter((id) => ctx.nodes.includes(id)).length;
  const start = report.steps.find((s) => s.step === 'start');
  const planned = start?.step === 'start' ? start.pipelines.length : (frames[0]?.plan.pipelines.length ?? copies.length);
  const added = (n: number, what: string) => (n > 0 ? ` + ${n} ${what}` : '');
  const facts = [
    ['topology', report.topology ?? '(in memory)'],
    ['nodes', `${ctx.nodes.length - joined} at the start${added(joined, 'joined')}`],
    ['copies', `${planned} planned${added(copies.length - planned, 'new')}`],
    ['model reported', report.model],
    ['node killed', report.kill],
    ['tokens per request', String(report.tokens)],
    ['seed', report.seed === null ? 'none' : String(report.seed)],
    ['final plan', report.planValid ? 'valid' : `INVALID: ${report.planIssues.join('; ')}`],
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
<div class="page">
<header>
<h1>${esc(title)}</h1>
<dl class="facts">${facts.map(([k, v]) => `<div><dt>${esc(k ?? '')}</dt><dd>${esc(v ?? '')}</dd></div>`).join('')}</dl>
<ol class="story">${story.join('')}</ol>
</header>
<nav class="toolbar" aria-label="steps"><span class="tabs">${tabs.join('')}</span><label class="filter">Filter by node id <input id="node-filter" type="search" placeholder="e.g. ${esc(report.kill)}" autocomplete="off"><output id="node-hits" for="node-filter"></output></label></nav>
<main>
${sections.join('\n')}
</main>
</div>
<script>${REPORT_SCRIPT}</script>
</body>
</html>
`;
}
