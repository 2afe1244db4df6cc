/**
 * One step of the HTML report: what happened and the status, the copies the step touched drawn
 * large with their node ids (the killed node's copies right after a kill), the nodes that are
 * down, suspected or spare, the overview of every copy, and the numbers behind the route.
 */
import type { Stage } from '../core/types.js';
import type { SimStep, SwarmSimReport } from './swarm-sim.js';
import { escapeHtml as esc } from './html-escape.js';
import { copyRow } from './report-copy-row.js';
import { nodeMark, type ReportFrame } from './report-frames.js';
import { legendHtml, overviewHtml, type ReportLayout } from './report-overview.js';
import { copyRows, failoverText, growthText, recoveryText, routeLine, routeSummary, stepSummary } from './report-text.js';

/** Touched copies drawn large before the rest are folded into a count. */
const FOCUS_ROWS = 8;
/** Per-token lines shown before the rest are folded away. */
const COPY_LINES = 6;
/** Node chips shown per kind before the rest are counted. */
const CHIPS = 24;

/** What one step section needs beside the step. */
export interface StepContext {
  readonly report: SwarmSimReport;
  readonly layout: ReportLayout;
  /** Memory of each node, for the chips' tooltips. */
  readonly memory: ReadonlyMap<string, number>;
  /** Every node met in the run, in a stable order. */
  readonly nodes: readonly string[];
}

/** The node a step is about, and what happened to its copies. */
function touched(step: SimStep): { node: string; note: string } | undefined {
  switch (step.step) {
    case 'failover':
      return { node: step.killed, note: `broken: ${step.killed} is down` };
    case 'growth':
      return { node: step.added.id, note: `${step.added.id} joined` };
    case 'revive':
      return { node: step.revived, note: `${step.revived} is back` };
    case 'retire':
    case 'rebalance':
      return undefined;
    case 'start':
      return undefined;
  }
}

/** The copies the step touched, then the route, each as a large row with its node ids. */
function focusRows(step: SimStep, frame: ReportFrame, ctx: StepContext): string {
  const { layout } = ctx;
  const rows: string[] = [];
  const about = touched(step);
  const byId = new Map(frame.plan.pipelines.map((p) => [p.id, p] as const));
  const picked: { id: string; note: string }[] = [];
  if (about !== undefined) for (const p of frame.plan.pipelines) if (p.stages.some((s) => s.nodeId === about.node)) picked.push({ id: p.id, note: about.note });
  if (step.step === 'retire') for (const id of new Set(step.relocated.map((r) => r.pipelineId))) picked.push({ id, note: `ranges moved off ${step.retired}` });
  if (step.step === 'rebalance') for (const m of step.moves) for (const p of m.adds) picked.push({ id: p.id, note: `${m.kind} ${m.id}: formed, replacing ${m.removes.join(', ') || 'nothing (idle nodes)'}` });
  for (const { id, note } of picked.slice(0, FOCUS_ROWS)) {
    const p = byId.get(id);
    if (p === undefined) continue;
    const served = step.route !== null && !step.route.degraded && step.route.pipelineId === id;
    rows.push(copyRow({ id, label: id, stages: p.stages, layers: layout.layers.get(p.modelId) ?? 1, frame, route: served, named: true, note, colour: layout.colours.get(p.modelId) ?? '#777' }));
  }
  if (picked.length > FOCUS_ROWS) rows.push(`<p class="more">and ${picked.length - FOCUS_ROWS} more cop${picked.length - FOCUS_ROWS === 1 ? 'y' : 'ies'} with ${esc(about?.node ?? 'a moved range')}: filter by node id to see them all</p>`);
  if (step.route !== null) {
    const r = step.route;
    const model = byId.get(r.pipelineId)?.modelId ?? (step.step === 'failover' && step.recovery !== null ? step.recovery.route.modelId : r.modelId);
    const missing = step.step === 'failover' ? (step.recovery?.missingLayers ?? []) : [];
    const note = r.degraded ? `DEGRADED, serves ${r.modelId}${missing.length > 0 ? `; layers ${missing.map((m) => `${m.layerStart}–${m.layerEnd}`).join(', ')} missing` : ''}` : `serves ${r.modelId} after this step`;
    const stages: Stage[] = r.stages.map((s) => ({ nodeId: s.nodeId, layerStart: s.layerStart, layerEnd: s.layerEnd }));
    rows.push(copyRow({ id: r.pipelineId, label: `route ${r.pipelineId}`, stages, layers: layout.layers.get(model) ?? 1, frame, route: true, named: true, note, colour: layout.colours.get(model) ?? '#777' }));
  } else {
    rows.push(`<p class="noroute">✕ ${esc(routeSummary(step))}: nothing serves ${esc(ctx.report.model)} after this step</p>`);
  }
  return `<div class="focus">${rows.join('')}</div>`;
}

/**
 * Why a node met in the run is not in the swarm at step `index`: it joins at a later step, it
 * retired at this one or before, or (frames from elsewhere) neither.
 */
function absence(id: string, index: number, report: SwarmSimReport): 'joining' | 'retired' | 'absent' {
  const joins = report.steps.findIndex((s) => s.step === 'growth' && s.added.id === id);
  if (joins > index) return 'joining';
  const retires = report.steps.findIndex((s) => s.step === 'retire' && s.retired === id);
  return retires !== -1 && retires <= index ? 'retired' : 'absent';
}

/** The nodes that are not simply serving: down, suspected, spare, not yet joined, retired; with counts. */
function nodesLine(frame: ReportFrame, ctx: StepContext, index: number): string {
  const serving = new Set(frame.plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
  const kinds = { down: [] as string[], suspect: [] as string[], spare: [] as string[], joining: [] as string[], retired: [] as string[], absent: [] as string[] };
  let inSwarm = 0;
  let working = 0;
  for (const id of ctx.nodes) {
    const mark = nodeMark(frame, id);
    if (mark !== 'absent') inSwarm++;
    if ((mark === 'up' || mark === 'suspect') && serving.has(id)) working++;
    if (mark === 'absent') kinds[absence(id, index, ctx.report)].push(id);
    else if (mark === 'down' || mark === 'suspect') kinds[mark].push(id);
    else if (!serving.has(id)) kinds.spare.push(id);
  }
  const chips = (ids: readonly string[], cls: string, sign: string) => {
    const shown = ids.slice(0, CHIPS).map((id) => {
      const gb = ctx.memory.get(id);
      return `<span class="chip ${cls}" data-nodes="${esc(id)}" title="${esc(id)}${gb === undefined ? '' : ` · ${gb} GB`}">${sign}${esc(id)}</span>`;
    });
    return `${shown.join('')}${ids.length > CHIPS ? `<span class="chip">+${ids.length - CHIPS} more</span>` : ''}`;
  };
  const parts = [`<span class="count">${inSwarm} node${inSwarm === 1 ? '' : 's'}, ${working} serving</span>`];
  if (kinds.down.length > 0) parts.push(`<span class="kind">✕ down</span>${chips(kinds.down, 'down', '✕ ')}`);
  if (kinds.suspect.length > 0) parts.push(`<span class="kind">◆ suspect</span>${chips(kinds.suspect, 'suspect', '◆ ')}`);
  if (kinds.spare.length > 0) parts.push(`<span class="kind">○ spare</span>${chips(kinds.spare, 'spare', '')}`);
  if (kinds.joining.length > 0) parts.push(`<span class="kind">not joined yet</span>${chips(kinds.joining, 'absent', '')}`);
  if (kinds.retired.length > 0) parts.push(`<span class="kind">retired</span>${chips(kinds.retired, 'absent', '')}`);
  if (kinds.absent.length > 0) parts.push(`<span class="kind">not in the swarm</span>${chips(kinds.absent, 'absent', '')}`);
  return `<p class="nodes">${parts.join(' ')}</p>`;
}

function dl(rows: readonly (readonly [string, string])[]): string {
  return `<dl class="details">${rows.map(([k, v]) => `<div><dt>${esc(k)}</dt><dd>${esc(v)}</dd></div>`).join('')}</dl>`;
}

/** The numbers behind the step: the route in full, the decision, and each copy's per-token time. */
function details(step: SimStep, report: SwarmSimReport): string {
  const rows: [string, string][] = [['status', step.status], ['route', routeLine(step)]];
  if (step.step === 'failover') {
    rows.push(['killed', step.killed], ['recovery', failoverText(step, report.model)]);
    const others = step.recoveries.filter((r) => r !== step.recovery && r.modelId !== report.model);
    for (const r of others) rows.push([`recovery of ${r.modelId}`, recoveryText(r, step.killed, r.modelId)]);
    if (step.unrecoverable.length > 0) rows.push(['unrecoverable', step.unrecoverable.join(', ')]);
  }
  if (step.step === 'growth') rows.push(['added', `${step.added.id} · ${step.added.memoryGb} GB${step.added.score !== undefined ? ` · score ${step.added.score}` : ''}`], ['role', growthText(step)]);
  if (step.step === 'revive') rows.push(['revived', step.revived]);
  if (step.step === 'retire') {
    rows.push(['retired', step.retired]);
    for (const r of step.relocated) rows.push(['relocated', `${r.pipelineId}: layers ${r.layerStart}–${r.layerEnd} ${r.from} → ${r.to}`]);
    if (step.dropped.length > 0) rows.push(['dropped', step.dropped.join(', ')]);
  }
  if (step.step === 'rebalance') {
    rows.push(['throughput', `${step.before} → ${step.after} layer-passes counted once, ${step.layersMoved} layers moved`]);
    for (const m of step.moves) rows.push([`move ${m.id}`, `${m.kind} of ${m.modelId}: ${m.removes.join(', ') || '(idle nodes)'} → ${m.adds.map((p) => `${p.id} (${p.nodes.join(' → ')})`).join(', ')}; ${m.layersMoved} layers in ${m.loadSeconds} s; gain ${m.gain}`]);
  }
  const times = copyRows(step);
  // The served copy, the broken ones and the fastest few are shown; every copy is one click away.
  const shown = times.filter(([, v], i) => i < 3 || v.endsWith('← route')).slice(0, COPY_LINES);
  const rest = times.filter((t) => !shown.includes(t));
  const more = [];
  if (rest.length > 0) more.push(`<details><summary>per-token time of the other ${rest.length} cop${rest.length === 1 ? 'y' : 'ies'} of ${esc(report.model)}</summary>${dl(rest)}</details>`);
  if (step.step === 'start') more.push(`<details><summary>the ${step.pipelines.length} copies planned</summary><p class="ids">${esc(step.pipelines.join(', '))}</p></details>`);
  return `${dl([...rows, ...shown])}${more.join('')}`;
}

/** One step as a section, reachable at `#step=N` (N from 1). */
export function stepSection(index: number, step: SimStep, frame: ReportFrame, ctx: StepContext): string {
  const [headline, detail] = stepSummary(step, ctx.report);
  const head = [
    `<h2><span class="n">${index + 1}.</span> ${esc(step.step)} <span class="badge ${esc(step.status)}">${esc(step.status)}</span> <span class="what">${esc(headline)}</span></h2>`,
    detail === undefined ? '' : `<p class="decision">${esc(detail)}</p>`,
    `<p class="route-line">${esc(routeSummary(step))}</p>`,
  ].join('');
  return `<section class="step" id="step=${index + 1}" data-step="${index + 1}" aria-label="step ${index + 1}: ${esc(step.step)}">
${head}
${focusRows(step, frame, ctx)}
${nodesLine(frame, ctx, index)}
${legendHtml(ctx.layout)}
${overviewHtml(frame, step, ctx.layout)}
${details(step, ctx.report)}
</section>`;
}
