/**
 * One copy of a model as one row of the HTML report: a shape for its state (▶ the route, ✕
 * broken by a down node, ◆ a suspect node, – not in the plan at this step), then a bar across
 * the model's layers cut into its stages, coloured by model; a down node's stage hatched red with
 * a ✕, a suspect node's striped amber with a ◆. Colour is never the only sign.
 */
import type { Stage } from '../core/types.js';
import { escapeHtml as esc } from './html-escape.js';
import { nodeMark, type NodeMark, type ReportFrame } from './report-frames.js';

/** What {@link copyRow} draws. */
export interface CopyRowInput {
  /** The copy's id (its pipeline id, or the route's). */
  readonly id: string;
  /** The text before the bar. */
  readonly label: string;
  /** Its stages; none for a copy that is not in the plan at this step. */
  readonly stages: readonly Stage[];
  /** The model's layer count: the full width of the bar. */
  readonly layers: number;
  readonly frame: ReportFrame;
  /** The route served after the step. */
  readonly route: boolean;
  /** Write each stage's node id inside its band. */
  readonly named: boolean;
  /** A few words after the bar. */
  readonly note?: string;
  /** The model's colour, when the row is not inside its model's block. */
  readonly colour?: string;
}

const SIGN: Readonly<Record<'ghost' | 'broken' | 'route' | 'suspect' | 'ok', [string, string]>> = {
  ghost: ['–', 'not in the plan at this step'],
  broken: ['✕', 'broken: a node is down'],
  route: ['▶', 'the route after this step'],
  suspect: ['◆', 'a node is suspected'],
  ok: ['', 'intact'],
};

/** The state of a copy whose nodes carry `marks`: the strongest sign wins. */
export function copyState(marks: readonly NodeMark[], route: boolean): keyof typeof SIGN {
  if (marks.length === 0) return 'ghost';
  if (marks.some((m) => m === 'down' || m === 'absent')) return 'broken';
  if (route) return 'route';
  return marks.includes('suspect') ? 'suspect' : 'ok';
}

/** One copy as a row (see the file comment). */
export function copyRow(input: CopyRowInput): string {
  const sorted = [...input.stages].sort((a, b) => a.layerStart - b.layerStart);
  const marks = sorted.map((s) => nodeMark(input.frame, s.nodeId));
  const state = copyState(marks, input.route);
  const [sign, meaning] = SIGN[state];
  const bands: string[] = [];
  let at = 0;
  sorted.forEach((s, i) => {
    if (s.layerStart > at) bands.push(`<i class="gap" style="flex:${s.layerStart - at}"></i>`);
    const mark = marks[i] ?? 'up';
    const text = input.named ? `${esc(s.nodeId)}<small>${s.layerStart}–${s.layerEnd}</small>` : '';
    bands.push(`<i class="s ${mark}" style="flex:${Math.max(s.layerEnd - s.layerStart, 0.5)}">${text}</i>`);
    at = Math.max(at, s.layerEnd);
  });
  if (sorted.length > 0 && at < input.layers) bands.push(`<i class="gap" style="flex:${input.layers - at}"></i>`);
  const nodes = [...new Set(sorted.map((s) => s.nodeId))];
  const title = sorted.length === 0 ? `${input.id}: ${meaning}` : `${input.id} (${meaning}): ${sorted.map((s, i) => `${s.nodeId} ${s.layerStart}–${s.layerEnd}${marks[i] === 'up' ? '' : ` ${marks[i] ?? ''}`}`).join(', ')}`;
  const classes = ['cp', state, input.route ? 'served' : ''].filter((c) => c !== '').join(' ');
  const colour = input.colour === undefined ? '' : ` style="--m:${input.colour}"`;
  const note = input.note === undefined ? '' : `<span class="nt">${esc(input.note)}</span>`;
  return `<div class="${classes}"${colour} data-nodes="${esc(nodes.join(' '))}" title="${esc(title)}"><b class="mk" aria-label="${meaning}">${sign}</b><span class="lb">${esc(input.label)}</span><span class="bar">${bands.join('')}</span>${note}</div>`;
}
