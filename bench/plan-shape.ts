/**
 * Plan shape before and after short copies (docs/cost.md): for each committed topology and the
 * 1,000-node swarm, the per-token time and throughput of the plan of the balanced planner (every
 * node dealt to exactly `pipelines` copies: the planner before short copies) and of planSwarm (short
 * copies, further copies from the nodes left), and on 1,000 nodes how long copies are against the
 * stages memory alone requires. Per-token time is each copy's cold cost without the tokens term
 * (docs/cost.md), in ms-like units: the chosen copy's (the lowest) and the mean over copies.
 */
import { copyTimes, planSwarm, SwarmState } from '../src/index.js';
import type { ModelSpec, NodeProfile, Pipeline, SwarmPlan } from '../src/index.js';
import { planBalanced } from '../src/core/plan.js';
import { largeSwarm } from './plan-quality.js';
import { capacityOf, loadTopologies, planThroughput } from './planners/throughput.js';
import type { BenchRow } from './types.js';

/** The longest copy may have at most this many times the stages memory requires. */
export const STAGE_FACTOR = 2;

interface Shape {
  readonly best: number;
  readonly mean: number;
  readonly throughput: number;
  readonly copies: number;
  readonly maxStages: number;
}

function shape(plan: SwarmPlan, nodes: readonly NodeProfile[], model: ModelSpec): Shape {
  const times = copyTimes(SwarmState.fromProfiles(plan, nodes), model.id).map((c) => c.perTokenMs);
  const copies = plan.pipelines.filter((p) => p.modelId === model.id);
  return {
    best: Math.min(...times),
    mean: times.reduce((s, t) => s + t, 0) / times.length,
    throughput: planThroughput(plan.pipelines, nodes, model.id),
    copies: copies.length,
    maxStages: Math.max(...copies.map((p) => p.stages.length)),
  };
}

/** The fewest nodes, largest first, whose memory holds one copy of `model`. */
export function memoryStages(nodes: readonly NodeProfile[], model: ModelSpec): number {
  const caps = nodes.map((n) => Math.min(capacityOf(n, model), model.layers)).sort((a, b) => b - a);
  let held = 0;
  let count = 0;
  for (const c of caps) {
    if (held >= model.layers) break;
    held += c;
    count++;
  }
  return held >= model.layers ? count : Infinity;
}

function rows(label: string, size: string, model: ModelSpec, before: Shape, after: Shape): BenchRow[] {
  const r = (x: number) => Number(x.toPrecision(4));
  const copies = `${size}; copies ${before.copies} -> ${after.copies}, longest ${before.maxStages} -> ${after.maxStages} stages`;
  return [
    { name: `plan per-token time, chosen copy / ${label}`, size: copies, median: r(after.best), unit: 'ms-like', baselineName: 'balanced planner (before)', baseline: r(before.best), ratio: r(after.best / before.best), target: '(reference) lower is faster', pass: true },
    { name: `plan per-token time, mean copy / ${label}`, size: copies, median: r(after.mean), unit: 'ms-like', baselineName: 'balanced planner (before)', baseline: r(before.mean), ratio: r(after.mean / before.mean), target: '(reference) lower is faster', pass: true },
    { name: `plan throughput, short copies / ${label}`, size: `${size} (${model.id})`, median: r(after.throughput), unit: 'throughput', baselineName: 'balanced planner (before)', baseline: r(before.throughput), ratio: r(after.throughput / before.throughput), target: '(reference) higher is better', pass: true },
  ];
}

/** The rows of the plan-shape bench, in a stable order. */
export function planShapeBench(): BenchRow[] {
  const out: BenchRow[] = [];
  for (const t of loadTopologies()) {
    const model = t.models[0] as ModelSpec;
    out.push(...rows(t.name, `${t.nodes.length} nodes`, model, shape(planBalanced(t.nodes, { models: t.models }), t.nodes, model), shape(planSwarm(t.nodes, { models: t.models }), t.nodes, model)));
  }
  // The opt-in stage bound (ModelSpec.stageFactor): its price in throughput where the hop rule alone plans long copies.
  for (const t of loadTopologies()) {
    const model = t.models[0] as ModelSpec;
    const free = planThroughput(planSwarm(t.nodes, { models: t.models }).pipelines, t.nodes, model.id);
    const bounded = planThroughput(planSwarm(t.nodes, { models: t.models.map((m) => ({ ...m, stageFactor: STAGE_FACTOR })) }).pipelines, t.nodes, model.id);
    out.push({ name: `plan throughput, stageFactor ${STAGE_FACTOR} / ${t.name}`, size: `${t.nodes.length} nodes`, median: r4(bounded), unit: 'throughput', baselineName: 'default plan (no bound)', baseline: r4(free), ratio: r4(bounded / free), target: '(reference) the price of the bound', pass: true });
  }
  const { nodes, models } = largeSwarm(1000, 42);
  const before = planBalanced(nodes, { models });
  const after = planSwarm(nodes, { models });
  const bounded = planSwarm(nodes, { models: models.map((m) => ({ ...m, stageFactor: STAGE_FACTOR })) });
  for (const model of models) {
    const free = perCopyOwn(after, nodes, model);
    const capped = perCopyOwn(bounded, nodes, model);
    const size = `${bounded.pipelines.filter((p) => p.modelId === model.id).length} copies (default plan: ${free.over} of ${after.pipelines.filter((p) => p.modelId === model.id).length} over, worst ${free.worst.toFixed(1)} x)`;
    out.push({
      name: `copy stages vs its own memory stages, stageFactor ${STAGE_FACTOR} / 1000 nodes ${model.id}`,
      size,
      median: r4(capped.worst),
      unit: 'x',
      baselineName: 'stageFactor',
      baseline: STAGE_FACTOR,
      ratio: r4(capped.worst / STAGE_FACTOR),
      target: 'ratio <= 1 (the fewest of the copy own nodes, largest first, holding the model in the memory the plan leaves them)',
      pass: capped.worst <= STAGE_FACTOR,
    });
    const x = planThroughput(after.pipelines, nodes, model.id);
    const y = planThroughput(bounded.pipelines, nodes, model.id);
    out.push({ name: `plan throughput, stageFactor ${STAGE_FACTOR} / 1000 nodes ${model.id}`, size: '1000 nodes, 4 models', median: r4(y), unit: 'throughput', baselineName: 'default plan (no bound)', baseline: r4(x), ratio: r4(y / x), target: '(reference) the price of the bound', pass: true });
  }
  for (const model of models) {
    out.push(...rows(`1000 nodes ${model.id}`, '1000 nodes, 4 models', model, shape(before, nodes, model), shape(after, nodes, model)));
    const need = memoryStages(nodes, model);
    const copies = after.pipelines.filter((p) => p.modelId === model.id);
    const longest = Math.max(...copies.map((p) => p.stages.length));
    const over = copies.filter((p) => p.stages.length > STAGE_FACTOR * need).length;
    out.push({
      name: `longest copy vs stages memory requires / 1000 nodes ${model.id}`,
      size: `${copies.length} copies, ${over} longer than ${STAGE_FACTOR} x ${need}; per copy (its own nodes, largest first) at most ${perCopyWorst(copies, nodes, model).toFixed(1)} x`,
      median: longest,
      unit: 'stages',
      baselineName: 'fewest nodes, largest first, holding the model',
      baseline: need,
      ratio: longest / need,
      target: `ratio <= ${STAGE_FACTOR}`,
      pass: longest <= STAGE_FACTOR * need,
    });
  }
  return out;
}

const r4 = (x: number) => Number(x.toPrecision(4));

/**
 * Each copy's stages against the fewest of its own nodes, largest first, that hold the model in
 * the memory the plan leaves them for it (the layers they hold in the copy plus their free memory).
 */
function perCopyOwn(plan: SwarmPlan, nodes: readonly NodeProfile[], model: ModelSpec): { worst: number; over: number } {
  const free = new Map(nodes.map((n) => [n.id, n.memoryGb] as const));
  const gb = new Map(plan.models.map((m) => [m.id, m.layerGb ?? 1] as const));
  for (const p of plan.pipelines) for (const s of p.stages) free.set(s.nodeId, (free.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * (gb.get(p.modelId) ?? 1));
  let worst = 0;
  let over = 0;
  for (const p of plan.pipelines) {
    if (p.modelId !== model.id) continue;
    const room = p.stages.map((s) => Math.min(model.layers, s.layerEnd - s.layerStart + Math.floor((free.get(s.nodeId) ?? 0) / (model.layerGb ?? 1) + 1e-9))).sort((a, b) => b - a);
    let held = 0;
    let need = 0;
    while (held < model.layers && need < room.length) held += room[need++] as number;
    const ratio = held >= model.layers ? p.stages.length / need : Number.POSITIVE_INFINITY;
    worst = Math.max(worst, ratio);
    if (ratio > STAGE_FACTOR) over++;
  }
  return { worst, over };
}

/** The largest stages / memory-stages ratio over copies, memory counted over each copy's own nodes. */
function perCopyWorst(copies: readonly Pipeline[], nodes: readonly NodeProfile[], model: ModelSpec): number {
  const byId = new Map(nodes.map((n) => [n.id, n] as const));
  let worst = 0;
  for (const p of copies) {
    const mine = p.stages.map((s) => byId.get(s.nodeId)).filter((n): n is NodeProfile => n !== undefined);
    worst = Math.max(worst, p.stages.length / memoryStages(mine, model));
  }
  return worst;
}
