/**
 * `swarm-sim --html`: the simulated lifecycle as one self-contained HTML page (inline CSS and SVG,
 * no script, no network fetch) with one SVG per step — nodes × layers, each copy a coloured band,
 * dead nodes struck through, the served route outlined, the status as a badge and the recovery
 * spelled out. Pure: data in, a string out.
 */
import type { NodeProfile, NodeStates, Pipeline, Recovery, Route, SwarmPlan } from '../core/types.js';
import { nullRecord, ownValue, setOwn } from '../core/records.js';
import { InputError } from './input-error.js';
import { htmlReportInputSchema } from './report-schema.js';
import { firstIssue } from './topology.js';
import type { SimStep, SwarmSimReport } from './swarm-sim.js';

/** The swarm as it was right after one step: its plan and its telemetry. */
export interface ReportFrame {
  readonly plan: SwarmPlan;
  readonly nodes: NodeStates;
}

/** What {@link renderHtmlReport} draws. */
export interface HtmlReportInput {
  /** The document `swarm-sim` prints. */
  readonly report: SwarmSimReport;
  /**
   * The plan and telemetry after each step, in step order (`runSwarmSim`'s `onStep`). Without them
   * every step is drawn on the final plan, with dead nodes worked out from the steps.
   */
  readonly frames?: readonly ReportFrame[];
  /** Profiles of the nodes, for their memory in the row labels. */
  readonly profiles?: readonly NodeProfile[];
  /** @defaultValue `hecate-swarm simulation` */
  readonly title?: string;
}

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#ff9da7', '#9c755f', '#e15759', '#bab0ac'];
const STATUS_COLOUR: Readonly<Record<string, string>> = { healthy: '#2e7d32', degraded: '#ef6c00', failed: '#c62828', stopped: '#616161' };

const LABEL_W = 170;
const ROW_H = 26;
const AXIS_H = 34;
const PAD = 16;
const MODEL_GAP = 14;

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
  const memory = new Map((input.profiles ?? []).map((p) => [p.id, p.memoryGb] as const));
  for (const step of report.steps) if (step.step === 'growth') memory.set(step.added.id, step.added.memoryGb);
  const nodeOrder = orderNodes(report, frames, input.profiles ?? []);
  const colours = pipelineColours(frames);
  const title = input.title ?? 'hecate-swarm simulation';
  const sections = report.steps.map((step, i) => {
    const frame = frames[i] as ReportFrame;
    const svg = stepSvg(i, step, frame, nodeOrder, colours, memory, report);
    return `<section class="step" id="step-${i + 1}">\n${svg}\n${stepDetails(step, report)}\n</section>`;
  });
  const facts = [
    ['topology', report.topology ?? '(in memory)'],
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
<style>${CSS}</style>
</head>
<body>
<header>
<h1>${esc(title)}</h1>
<dl class="facts">${facts.map(([k, v]) => `<div><dt>${esc(k ?? '')}</dt><dd>${esc(v ?? '')}</dd></div>`).join('')}</dl>
<p class="how">Rows are nodes, columns are layers of each model. A coloured band is the layer range a node holds in one copy (pipeline); a faded dashed band is a copy broken by a dead node. The black outline and arrows are the route served after the step. A struck-through red row is a node that is down.</p>
</header>
<main>
${sections.join('\n')}
</main>
</body>
</html>
`;
}

/** Without frames: the final plan for every step; alive/down replayed from the steps. */
function framesFromReport(report: SwarmSimReport): ReportFrame[] {
  const down = new Set<string>();
  const gone = new Set<string>();
  const ids = new Set(report.plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
  return report.steps.map((step) => {
    if (step.step === 'failover') down.add(step.killed);
    if (step.step === 'revive') down.delete(step.revived);
    if (step.step === 'retire') gone.add(step.retired);
    if (step.step === 'growth') ids.add(step.added.id);
    const nodes = nullRecord<{ alive: boolean; samples: number }>();
    for (const id of [...ids, ...down]) if (!gone.has(id)) setOwn(nodes, id, { alive: !down.has(id), samples: 0 });
    return { plan: report.plan, nodes };
  });
}

/** Profiles' order first, then any node met later (newcomers), so rows never move between steps. */
function orderNodes(report: SwarmSimReport, frames: readonly ReportFrame[], profiles: readonly NodeProfile[]): string[] {
  const order = new Set(profiles.map((p) => p.id));
  for (const frame of frames) {
    for (const id of Object.keys(frame.nodes)) order.add(id);
    for (const p of frame.plan.pipelines) for (const s of p.stages) order.add(s.nodeId);
  }
  for (const step of report.steps) if (step.step === 'growth') order.add(step.added.id);
  return [...order];
}

function pipelineColours(frames: readonly ReportFrame[]): Map<string, string> {
  const colours = new Map<string, string>();
  for (const frame of frames) {
    for (const p of frame.plan.pipelines) if (!colours.has(p.id)) colours.set(p.id, PALETTE[colours.size % PALETTE.length] as string);
  }
  return colours;
}

function statusColour(status: string): string {
  return STATUS_COLOUR[status] ?? '#616161';
}

interface ModelColumn {
  readonly id: string;
  readonly layers: number;
  readonly x: number;
}

function stepSvg(
  index: number,
  step: SimStep,
  frame: ReportFrame,
  nodeOrder: readonly string[],
  colours: ReadonlyMap<string, string>,
  memory: ReadonlyMap<string, number>,
  report: SwarmSimReport,
): string {
  const models = frame.plan.models;
  const totalLayers = models.reduce((s, m) => s + m.layers, 0);
  const cell = Math.max(3, Math.min(24, Math.floor((900 - MODEL_GAP * (models.length - 1)) / Math.max(totalLayers, 1))));
  const columns: ModelColumn[] = [];
  let x = LABEL_W;
  for (const m of models) {
    columns.push({ id: m.id, layers: m.layers, x });
    x += m.layers * cell + MODEL_GAP;
  }
  const gridRight = x - MODEL_GAP;
  const legendItems = frame.plan.pipelines.map((p) => p.id);
  const legendRows = Math.ceil((legendItems.length + 2) / 4);
  const width = Math.max(gridRight + PAD, 720);
  const [headline, detail] = stepSummary(step, report);
  const headerH = detail === undefined ? 68 : 90;
  const gridTop = headerH + AXIS_H;
  const gridBottom = gridTop + nodeOrder.length * ROW_H;
  const height = gridBottom + 16 + legendRows * 20 + PAD;
  const rowOf = new Map(nodeOrder.map((id, i) => [id, gridTop + i * ROW_H] as const));
  const column = new Map(columns.map((c) => [c.id, c] as const));
  const out: string[] = [];
  const titleId = `step-${index + 1}-title`;
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="grid" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="${titleId}">`);
  out.push(`<title id="${titleId}">Step ${index + 1}: ${esc(step.step)}, status ${esc(step.status)}</title>`);
  out.push(`<defs><marker id="arrow-${index}" viewBox="0 0 10 10" refX="8" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#111"/></marker>`);
  out.push(`<pattern id="hatch-${index}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fafafa"/><line x1="0" y1="0" x2="0" y2="6" stroke="#d0d0d0" stroke-width="3"/></pattern></defs>`);
  out.push(`<rect x="0.5" y="0.5" width="${width - 1}" height="${height - 1}" rx="10" fill="#fff" stroke="#d9dde3"/>`);

  // Header: step and status badge with what happened; then how it recovered or grew; then the route.
  const heading = `${index + 1}. ${step.step}`;
  out.push(`<text x="${PAD}" y="28" class="h">${esc(heading)}</text>`);
  const badgeX = PAD + heading.length * 10.5 + 14;
  const badgeW = step.status.length * 8 + 22;
  out.push(`<rect x="${badgeX}" y="11" width="${badgeW}" height="23" rx="11.5" fill="${statusColour(step.status)}"/>`);
  out.push(`<text x="${badgeX + badgeW / 2}" y="27" class="badge" text-anchor="middle">${esc(step.status)}</text>`);
  out.push(`<text x="${badgeX + badgeW + 12}" y="27" class="sub">${esc(fit(headline, width - badgeX - badgeW - 12 - PAD, 7.6))}</text>`);
  if (detail !== undefined) out.push(`<text x="${PAD}" y="52" class="detail">${esc(fit(detail, width - 2 * PAD, 7.4))}</text>`);
  out.push(`<text x="${PAD}" y="${detail === undefined ? 52 : 74}" class="route">${esc(fit(routeSummary(step), width - 2 * PAD, 7.2))}</text>`);

  // Model headers and layer axes.
  for (const c of columns) {
    const w = c.layers * cell;
    out.push(`<text x="${c.x}" y="${headerH + 12}" class="model">${esc(c.id)} · ${c.layers} layers</text>`);
    out.push(`<rect x="${c.x}" y="${gridTop}" width="${w}" height="${gridBottom - gridTop}" fill="#f7f8fa"/>`);
    const tickEvery = niceStep(c.layers, w);
    for (let l = 0; l <= c.layers; l += tickEvery) {
      const tx = c.x + l * cell;
      out.push(`<line x1="${tx}" y1="${gridTop - 4}" x2="${tx}" y2="${gridBottom}" stroke="#e6e8ec"/>`);
      out.push(`<text x="${tx}" y="${gridTop - 7}" class="tick" text-anchor="middle">${l}</text>`);
    }
    if (c.layers % tickEvery !== 0) {
      const tx = c.x + w;
      out.push(`<line x1="${tx}" y1="${gridTop - 4}" x2="${tx}" y2="${gridBottom}" stroke="#e6e8ec"/>`);
      out.push(`<text x="${tx}" y="${gridTop - 7}" class="tick" text-anchor="middle">${c.layers}</text>`);
    }
  }

  // Rows: label, background; dead rows red and struck through, absent rows hatched.
  const inPlan = new Set(frame.plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
  nodeOrder.forEach((id, i) => {
    const y = gridTop + i * ROW_H;
    const telemetry = ownValue(frame.nodes, id);
    const state = telemetry === undefined ? 'absent' : telemetry.alive ? (inPlan.has(id) ? 'alive' : 'spare') : 'down';
    if (i % 2 === 1) out.push(`<rect x="${PAD}" y="${y}" width="${gridRight - PAD}" height="${ROW_H}" fill="#000" fill-opacity="0.025"/>`);
    if (state === 'down') out.push(`<rect x="${PAD}" y="${y}" width="${gridRight - PAD}" height="${ROW_H}" fill="#fdecea"/>`);
    if (state === 'absent') out.push(`<rect x="${LABEL_W}" y="${y}" width="${gridRight - LABEL_W}" height="${ROW_H}" fill="url(#hatch-${index})"/>`);
    const gb = memory.get(id);
    const note = state === 'down' ? 'down' : state === 'absent' ? 'not in swarm' : state === 'spare' ? 'spare' : gb === undefined ? '' : `${gb} GB`;
    out.push(`<text x="${PAD + 4}" y="${y + 17}" class="node ${state}">${esc(truncate(id, 16))}</text>`);
    out.push(`<text x="${LABEL_W - 8}" y="${y + 17}" class="note ${state}" text-anchor="end">${esc(note)}</text>`);
  });

  // Bands: every stage of every copy; a copy with a dead node is faded and dashed.
  for (const p of frame.plan.pipelines) {
    const c = column.get(p.modelId);
    if (c === undefined) continue;
    const broken = p.stages.some((s) => ownValue(frame.nodes, s.nodeId)?.alive === false);
    const colour = colours.get(p.id) ?? '#999';
    for (const s of p.stages) {
      const y = rowOf.get(s.nodeId);
      if (y === undefined) continue;
      const bx = c.x + s.layerStart * cell;
      const bw = (s.layerEnd - s.layerStart) * cell;
      const style = broken ? `fill="${colour}" fill-opacity="0.28" stroke="${colour}" stroke-dasharray="4 3"` : `fill="${colour}"`;
      out.push(`<rect x="${bx + 0.5}" y="${y + 4}" width="${Math.max(bw - 1, 1)}" height="${ROW_H - 8}" rx="3" ${style}><title>${esc(p.id)}: ${esc(s.nodeId)} layers ${s.layerStart}–${s.layerEnd}</title></rect>`);
      const label = `${s.layerStart}–${s.layerEnd}`;
      if (bw >= label.length * 6.2 + 6) out.push(`<text x="${bx + bw / 2}" y="${y + 17}" class="band${broken ? ' faded' : ''}" text-anchor="middle">${label}</text>`);
    }
  }

  // Struck-through dead rows, over the bands.
  nodeOrder.forEach((id, i) => {
    if (ownValue(frame.nodes, id)?.alive !== false) return;
    const y = gridTop + i * ROW_H + ROW_H / 2;
    out.push(`<line x1="${PAD}" y1="${y}" x2="${gridRight}" y2="${y}" stroke="#c62828" stroke-width="2"/>`);
  });

  // The route: outlined stages, arrows from one stage to the next, missing layers hatched red.
  if (step.route !== null) {
    const modelId = routeModel(step.route, frame.plan, step);
    const c = column.get(modelId);
    if (c !== undefined) {
      const boxes = step.route.stages.flatMap((s) => {
        const y = rowOf.get(s.nodeId);
        return y === undefined ? [] : [{ x: c.x + s.layerStart * cell, w: (s.layerEnd - s.layerStart) * cell, y }];
      });
      for (const b of boxes) out.push(`<rect x="${b.x + 0.5}" y="${b.y + 2}" width="${Math.max(b.w - 1, 1)}" height="${ROW_H - 4}" rx="4" fill="none" stroke="#111" stroke-width="2.5"/>`);
      for (let k = 1; k < boxes.length; k++) {
        const a = boxes[k - 1];
        const b = boxes[k];
        if (a === undefined || b === undefined || a.y === b.y) continue;
        const down = b.y > a.y;
        const ax = a.x + a.w - 1;
        out.push(`<line x1="${ax}" y1="${a.y + (down ? ROW_H - 2 : 2)}" x2="${ax}" y2="${b.y + (down ? 4 : ROW_H - 4)}" stroke="#111" stroke-width="1.6" marker-end="url(#arrow-${index})"/>`);
      }
      const missing = step.step === 'failover' ? (step.recovery?.missingLayers ?? []) : [];
      for (const m of missing) {
        out.push(`<rect x="${c.x + m.layerStart * cell}" y="${gridTop - 3}" width="${(m.layerEnd - m.layerStart) * cell}" height="${gridBottom - gridTop + 3}" fill="#c62828" fill-opacity="0.12" stroke="#c62828" stroke-dasharray="3 2"><title>missing layers ${m.layerStart}–${m.layerEnd}</title></rect>`);
      }
    }
  }

  // Legend.
  const legend: string[] = [];
  let lx = PAD;
  let ly = gridBottom + 20;
  const place = (w: number): [number, number] => {
    if (lx + w > width - PAD) {
      lx = PAD;
      ly += 20;
    }
    const at: [number, number] = [lx, ly];
    lx += w;
    return at;
  };
  for (const id of legendItems) {
    const [px, py] = place(Math.max(120, id.length * 7 + 34));
    legend.push(`<rect x="${px}" y="${py - 10}" width="14" height="12" rx="2" fill="${colours.get(id) ?? '#999'}"/><text x="${px + 20}" y="${py}" class="legend">${esc(id)}</text>`);
  }
  {
    const [px, py] = place(110);
    legend.push(`<rect x="${px}" y="${py - 11}" width="18" height="14" rx="3" fill="none" stroke="#111" stroke-width="2"/><text x="${px + 24}" y="${py}" class="legend">route</text>`);
  }
  {
    const [px, py] = place(130);
    legend.push(`<line x1="${px}" y1="${py - 4}" x2="${px + 18}" y2="${py - 4}" stroke="#c62828" stroke-width="2"/><text x="${px + 24}" y="${py}" class="legend">node down</text>`);
  }
  out.push(...legend);
  out.push('</svg>');
  return out.join('\n');
}

/** The model whose layers a route's stages index: a degraded route reports its fallback model. */
function routeModel(route: Route, plan: SwarmPlan, step: SimStep): string {
  const pipeline: Pipeline | undefined = plan.pipelines.find((p) => p.id === route.pipelineId);
  if (pipeline !== undefined) return pipeline.modelId;
  if (step.step === 'failover' && step.recovery !== null) return step.recovery.modelId;
  return route.modelId;
}

function niceStep(layers: number, widthPx: number): number {
  const maxTicks = Math.max(2, Math.floor(widthPx / 28));
  for (const s of [1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100]) if (layers / s <= maxTicks) return s;
  return Math.ceil(layers / maxTicks);
}

function stages(route: Route): string {
  return route.stages.map((s) => `${s.nodeId} [${s.layerStart}–${s.layerEnd})`).join(' → ');
}

function routeLine(step: SimStep): string {
  if (step.route === null) return `No route: ${step.routeError?.code ?? 'error'} — ${step.routeError?.message ?? ''}`;
  const r = step.route;
  return `Route ${r.modelId} via ${r.pipelineId}${r.degraded ? ' (DEGRADED)' : ''}: ${stages(r)} · cost ${r.cost.toFixed(1)} · ${r.hops} hop${r.hops === 1 ? '' : 's'}`;
}

/** What the step did: a headline, and the recovery or growth decision spelled out. */
function stepSummary(step: SimStep, report: SwarmSimReport): [string, string | undefined] {
  switch (step.step) {
    case 'start':
      return [`planned ${step.pipelines.length} cop${step.pipelines.length === 1 ? 'y' : 'ies'} of ${countModels(step.pipelines)} model(s)`, undefined];
    case 'failover': {
      const others = step.unrecoverable.filter((m) => m !== report.model);
      const lost = others.length > 0 ? ` · unrecoverable: ${others.join(', ')}` : '';
      return [`${step.killed} dies`, `Recovery: ${failoverText(step, report.model)}${lost}`];
    }
    case 'growth':
      return [`${step.added.id} joins (${step.added.memoryGb} GB)`, `Growth: ${growthText(step)}`];
    case 'revive':
      return [`${step.revived} is back`, undefined];
    case 'retire': {
      const dropped = step.dropped.length > 0 ? ` · dropped ${step.dropped.join(', ')}` : '';
      const moved = step.relocated.map((r) => `${r.pipelineId} ${r.layerStart}–${r.layerEnd} → ${r.to}`).join(', ');
      return [`${step.retired} retires`, `Relocation: ${step.relocated.length} range(s)${moved ? ` (${moved})` : ''}${dropped}`];
    }
  }
}

/** The route in one short line; its stages are drawn. */
function routeSummary(step: SimStep): string {
  if (step.route === null) return `No route: ${step.routeError?.code ?? 'error'}`;
  const r = step.route;
  return `Route: ${r.modelId} via ${r.pipelineId}${r.degraded ? ' (DEGRADED)' : ''} · ${r.stages.length} stage${r.stages.length === 1 ? '' : 's'} · ${r.hops} hop${r.hops === 1 ? '' : 's'} · cost ${r.cost.toFixed(1)}`;
}

/** Cuts `text` to about `widthPx` at `charPx` per character (SVG text does not wrap). */
function fit(text: string, widthPx: number, charPx: number): string {
  const max = Math.max(8, Math.floor(widthPx / charPx));
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function countModels(pipelineIds: readonly string[]): number {
  return new Set(pipelineIds.map((id) => id.split('/')[0])).size;
}

function growthText(step: Extract<SimStep, { step: 'growth' }>): string {
  const on = step.pipelines.length > 0 ? ` (${step.pipelines.join(', ')})` : '';
  switch (step.role) {
    case 'restore':
      return `restores a missing copy${step.modelId ? ` of ${step.modelId}` : ''}${on}`;
    case 'copy':
      return `adds a copy${step.modelId ? ` of ${step.modelId}` : ''}${on}`;
    case 'expert':
      return `hosts expert ${step.modelId ?? ''}${on}`;
    case 'spare':
      return 'waits as a spare for splices and relocation';
  }
}

/** The failover of the reported model, spelled out, including when there was none to be had. */
function failoverText(step: Extract<SimStep, { step: 'failover' }>, model: string): string {
  if (step.recovery === null && step.unrecoverable.includes(model)) {
    return `none — ${model} is unrecoverable (no intact copy, no splice, nothing left to degrade to)`;
  }
  return recoveryText(step.recovery, step.killed, model);
}

/** The recovery strategy, spelled out. */
export function recoveryText(recovery: Recovery | null, killed: string, model: string): string {
  if (recovery === null) return `the route of ${model} did not use ${killed}: nothing to recover`;
  switch (recovery.strategy) {
    case 'unaffected':
      return `unaffected: the route did not use ${killed}`;
    case 'copy':
      return `intact copy — ${recovery.route.pipelineId} replaces ${recovery.from.pipelineId} whole`;
    case 'splice':
      return `splice — ${recovery.replaced.map((r) => `layers ${r.layerStart}–${r.layerEnd} ${r.from} → ${r.to}`).join(', ')}`;
    case 'degraded': {
      const missing = recovery.missingLayers.map((m) => `${m.layerStart}–${m.layerEnd}`).join(', ');
      return `DEGRADED — survivors of ${recovery.from.pipelineId} serve as ${recovery.route.modelId}; layers ${missing || 'none'} missing`;
    }
  }
}

function stepDetails(step: SimStep, report: SwarmSimReport): string {
  const rows: [string, string][] = [['status', step.status], ['route', routeLine(step)]];
  if (step.step === 'start') rows.push(['copies', step.pipelines.join(', ')]);
  rows.push(...copyRows(step));
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
  return `<dl class="details">${rows.map(([k, v]) => `<div><dt>${esc(k)}</dt><dd>${esc(v)}</dd></div>`).join('')}</dl>`;
}

/**
 * One row per copy of the reported model: its per-token time (compute + hops, docs/cost.md),
 * fastest first, the served copy marked, broken copies said so: why the route was chosen.
 */
function copyRows(step: SimStep): [string, string][] {
  const copies = [...(step.copies ?? [])].sort((a, b) => Number(b.intact) - Number(a.intact) || a.perTokenMs - b.perTokenMs || (a.pipelineId < b.pipelineId ? -1 : 1));
  return copies.map((c) => {
    const served = step.route !== null && !step.route.degraded && step.route.pipelineId === c.pipelineId ? ' ← route' : '';
    const state = c.intact ? '' : ' · broken (a node is down)';
    const stages = `${c.stages} stage${c.stages === 1 ? '' : 's'}`;
    const rate = typeof c.throughput === 'number' ? ` · throughput ${c.throughput.toFixed(3)}` : '';
    return [`per-token ${c.pipelineId}`, `${c.perTokenMs.toFixed(1)} ms = compute ${c.computeMs.toFixed(1)} + hops ${c.hopMs.toFixed(1)} · ${stages}${rate}${state}${served}`];
  });
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Escapes text for HTML and SVG (node and model ids come from user files). */
function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const CSS = `
:root { color-scheme: light; }
body { margin: 0; background: #f3f4f6; color: #1f2328; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header, main { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
h1 { font-size: 24px; margin: 24px 0 8px; }
.facts { display: flex; flex-wrap: wrap; gap: 6px 22px; margin: 0 0 8px; }
.facts div, .details div { display: flex; gap: 6px; }
dt { color: #57606a; }
dt::after { content: ":"; }
dd { margin: 0; font-weight: 600; }
.how { color: #57606a; max-width: 900px; margin: 4px 0 16px; }
.step { background: #fff; border: 1px solid #d9dde3; border-radius: 12px; padding: 16px; margin: 0 0 18px; overflow-x: auto; }
.details { display: grid; gap: 3px; margin: 10px 0 0; }
.details dd { font-weight: 400; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
svg.grid { display: block; max-width: 100%; height: auto; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; fill: #1f2328; }
svg .h { font-size: 18px; font-weight: 700; }
svg .badge { font-size: 12px; font-weight: 700; fill: #fff; text-transform: uppercase; letter-spacing: .04em; }
svg .sub { font-size: 14px; }
svg .detail { font-size: 13.5px; fill: #24292f; }
svg .route { font-size: 12.5px; font-family: ui-monospace, "DejaVu Sans Mono", monospace; fill: #333; }
svg .model { font-size: 12.5px; font-weight: 700; fill: #444; }
svg .tick { font-size: 10px; fill: #8a9099; }
svg .node { font-size: 13px; font-weight: 600; }
svg .node.down { fill: #c62828; text-decoration: line-through; }
svg .node.absent { fill: #9aa0a6; font-style: italic; }
svg .note { font-size: 11px; fill: #6b7280; }
svg .note.down { fill: #c62828; font-weight: 700; }
svg .band { font-size: 10.5px; font-weight: 600; fill: #fff; }
svg .band.faded { fill: #444; }
svg .legend { font-size: 12px; }
`;
