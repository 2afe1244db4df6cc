/**
 * The overview of one step: every copy of every model as one row (report-copy-row.ts), grouped by
 * model, in columns, so a 1,000-node swarm fits on one screen of a 1,280 px window. How tightly
 * the rows pack depends only on how many copies the run has, so every step of a run is drawn alike.
 */
import type { SimStep } from './swarm-sim.js';
import { escapeHtml as esc } from './html-escape.js';
import { copyRow, copyState } from './report-copy-row.js';
import { nodeMark, type CopyEntry, type ReportFrame } from './report-frames.js';

/** How tightly the rows pack: node ids in the bands, short labels, or bars only. */
export type Density = 'full' | 'medium' | 'dense';

/** Up to 40 copies the bands name their nodes; up to 400 they are labelled by copy; beyond, bars only. */
export function densityFor(copies: number): Density {
  return copies <= 40 ? 'full' : copies <= 400 ? 'medium' : 'dense';
}

/** Colour by model: eight hues that are neither the red of down nor the amber of suspect. */
const MODEL_PALETTE = ['#3f6fb0', '#2b9a8f', '#8a63b8', '#5d8f3a', '#a0705a', '#3c4f7a', '#c2628f', '#6e7f8c'];

/** A colour per model, in the order given; past eight they repeat (and the model's name says which). */
export function modelColours(models: readonly string[]): Map<string, string> {
  return new Map(models.map((m, i) => [m, MODEL_PALETTE[i % MODEL_PALETTE.length] as string] as const));
}

/** What every step shares: the rows, the colours and the layers of every model, the density. */
export interface ReportLayout {
  readonly copies: readonly CopyEntry[];
  readonly colours: ReadonlyMap<string, string>;
  readonly layers: ReadonlyMap<string, number>;
  readonly density: Density;
}

/** The label of a copy in its model's block: its id without the model. */
function shortLabel(id: string, modelId: string, density: Density): string {
  const tail = id.startsWith(`${modelId}/`) ? id.slice(modelId.length + 1) : id;
  if (density === 'dense') return '';
  const max = density === 'full' ? 14 : 5;
  return tail.length <= max ? tail : `${tail.slice(0, max - 1)}…`;
}

/** The overview of one step (see the file comment). */
export function overviewHtml(frame: ReportFrame, step: SimStep, layout: ReportLayout): string {
  const inPlan = new Map(frame.plan.pipelines.map((p) => [p.id, p] as const));
  const served = step.route === null || step.route.degraded ? undefined : step.route.pipelineId;
  const blocks: string[] = [];
  const models = [...new Set(layout.copies.map((c) => c.modelId))];
  for (const modelId of models) {
    const layers = layout.layers.get(modelId) ?? 1;
    const counts = { ok: 0, broken: 0, suspect: 0, ghost: 0 };
    const rows = layout.copies
      .filter((c) => c.modelId === modelId)
      .map((c) => {
        const stages = inPlan.get(c.id)?.stages ?? [];
        const state = copyState(stages.map((s) => nodeMark(frame, s.nodeId)), false);
        counts[state === 'route' ? 'ok' : state]++;
        return copyRow({ id: c.id, label: shortLabel(c.id, modelId, layout.density), stages, layers, frame, route: c.id === served, named: layout.density === 'full' });
      });
    const total = rows.length - counts.ghost;
    const parts = [`${layers} layers`, `${total} cop${total === 1 ? 'y' : 'ies'}`];
    if (counts.broken > 0) parts.push(`✕ ${counts.broken} broken`);
    if (counts.suspect > 0) parts.push(`◆ ${counts.suspect} with a suspect node`);
    if (counts.ghost > 0) parts.push(`– ${counts.ghost} not in the plan now`);
    blocks.push(
      `<div class="model" style="--m:${layout.colours.get(modelId) ?? '#777'}"><h3><span class="sw"></span>${esc(modelId)} <small>${esc(parts.join(' · '))}</small></h3><div class="rows">${rows.join('')}</div></div>`,
    );
  }
  return `<div class="overview ${layout.density}">${blocks.join('')}</div>`;
}

/** The legend: every model's colour, then the shapes. */
export function legendHtml(layout: ReportLayout): string {
  const models = [...layout.colours].map(([id, colour]) => `<span class="key" style="--m:${colour}"><span class="sw"></span>${esc(id)}</span>`);
  const shapes = [
    '<span class="key"><b class="mk route-key">▶</b>route after the step</span>',
    '<span class="key"><b class="mk broken-key">✕</b><i class="s down sample"></i>node down, its copy broken</span>',
    '<span class="key"><b class="mk suspect-key">◆</b><i class="s suspect sample"></i>node suspected</span>',
    '<span class="key"><b class="mk">–</b>copy not in the plan at this step</span>',
  ];
  return `<p class="legend">${models.join('')}${shapes.join('')}</p>`;
}
