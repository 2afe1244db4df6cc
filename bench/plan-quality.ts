/**
 * Plan quality, side by side (docs/performance.md): on every committed topology of bench/topologies, the
 * throughput of planSwarm's plan — Σ over copies of 1 / (slowest stage time), a stage's time
 * being its layers / its node's score — against an exo-style planner (memory-proportional), a
 * Petals-style greedy (memory-sized spans where throughput is lowest) and the compute bound
 * Σ score / layers; then the geometric mean against exo-style and the time planSwarm takes on
 * 1,000 nodes. Run alone (`node dist/bench/plan-quality.js`) it prints a table.
 */
import { pathToFileURL } from 'node:url';
import { planSwarm } from '../src/index.js';
import { uniform } from '../src/core/random.js';
import type { ModelSpec, NodeProfile, Pipeline } from '../src/index.js';
import type { BenchRow } from './types.js';
import { planShapeBench } from './plan-shape.js';
import { countedOnceBench } from './counted-once.js';
import { planExo } from './planners/exo.js';
import { planPetals } from './planners/petals.js';
import { computeBound, loadTopologies, memoryAllowsBound, memoryAwareBound, planThroughput, type Topology } from './planners/throughput.js';

/** Share of the compute bound a plan must reach where memory allows it. */
export const BOUND_SHARE = 0.85;
/** Geometric-mean advantage over the exo-style planner. */
export const EXO_GEOMEAN = 2;
/** planSwarm on the large swarm (1,000 nodes x 4 models), median milliseconds. */
export const PLAN_MS = 1000;

/** The four throughputs of one topology's single model. */
export interface TopologyQuality {
  readonly topology: string;
  readonly size: string;
  readonly ours: number;
  readonly exo: number;
  readonly petals: number;
  readonly bound: number;
  /** The bound that counts memory too (see memoryAwareBound); equals `bound` where memory allows. */
  readonly memoryBound: number;
  /** Whether memory lets a plan reach the bound (see memoryAllowsBound). */
  readonly memoryAllows: boolean;
}

/** Plans one topology with every planner and measures the throughputs. */
export function measureTopology(t: Topology): TopologyQuality {
  const model = t.models[0];
  if (model === undefined || t.models.length !== 1) throw new Error(`${t.name}: the quality bench compares single-model topologies, found ${t.models.length} models`);
  const ours = planThroughput(planSwarm(t.nodes, { models: t.models }).pipelines, t.nodes, model.id);
  return {
    topology: t.name,
    size: `${t.nodes.length} nodes, ${model.pipelines ?? 1} x ${model.layers} layers`,
    ours,
    exo: throughputOrZero(() => planExo(t.nodes, model), t.nodes, model),
    petals: throughputOrZero(() => planPetals(t.nodes, model), t.nodes, model),
    bound: computeBound(t.nodes, model),
    memoryBound: memoryAwareBound(t.nodes, model),
    memoryAllows: memoryAllowsBound(t.nodes, model),
  };
}

/** A reference planner that cannot place every copy serves nothing. */
function throughputOrZero(plan: () => Pipeline[], nodes: readonly NodeProfile[], model: ModelSpec): number {
  try {
    return planThroughput(plan(), nodes, model.id);
  } catch {
    return 0;
  }
}

/** Every row of the plan-quality bench, in a stable order. */
export async function planQualityBench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const measured = loadTopologies().map(measureTopology);
  for (const q of measured) {
    for (const [baselineName, baseline] of [
      ['exo-style', q.exo],
      ['petals-style', q.petals],
    ] as const) {
      rows.push({
        name: `plan throughput vs ${baselineName} / ${q.topology}`,
        size: q.size,
        median: q.ours,
        unit: 'throughput',
        baselineName,
        baseline,
        ratio: q.ours / baseline,
        target: 'ratio >= 1',
        pass: q.ours >= baseline * (1 - 1e-9),
      });
    }
    rows.push({
      name: `plan throughput vs compute bound / ${q.topology}`,
      size: q.size,
      median: q.ours,
      unit: 'throughput',
      baselineName: 'compute bound',
      baseline: q.bound,
      ratio: q.ours / q.bound,
      target: q.memoryAllows
        ? `ratio >= ${BOUND_SHARE}`
        : `none: memory-bound, memory caps any plan at ${q.memoryBound.toFixed(3)} (${((100 * q.memoryBound) / q.bound).toFixed(1)}% of the bound); reported only`,
      pass: !q.memoryAllows || q.ours >= BOUND_SHARE * q.bound,
    });
  }
  const geo = (xs: readonly number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
  const ratio = geo(measured.map((q) => q.ours / q.exo));
  rows.push({
    name: 'plan throughput vs exo-style / geometric mean',
    size: `${measured.length} topologies`,
    median: geo(measured.map((q) => q.ours)),
    unit: 'throughput',
    baselineName: 'exo-style',
    baseline: geo(measured.map((q) => q.exo)),
    ratio,
    target: `ratio >= ${EXO_GEOMEAN}`,
    pass: ratio >= EXO_GEOMEAN,
  });
  rows.push(...countedOnceBench());
  rows.push(...planShapeBench());
  const ms = timePlanSwarm();
  rows.push({
    name: 'planSwarm',
    size: '1000 nodes, 4 models x 4 copies x 80 layers',
    median: ms,
    unit: 'ms',
    target: `<= ${PLAN_MS} ms`,
    pass: ms <= PLAN_MS,
  });
  return rows;
}

/** Median wall time of planSwarm on a seeded 1,000-node swarm. */
export function timePlanSwarm(runs = 21): number {
  const { nodes, models } = largeSwarm(1000, 42);
  for (let i = 0; i < 3; i++) planSwarm(nodes, { models });
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    planSwarm(nodes, { models });
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? Number.NaN;
}

/** Device classes of the large swarm: [name, memoryGb range, score range, weight]. */
const CLASSES: readonly (readonly [string, readonly [number, number], readonly [number, number], number])[] = [
  ['gpu', [8, 24], [3, 12], 0.15],
  ['server', [128, 512], [0.5, 2], 0.05],
  ['mac', [16, 192], [1, 8], 0.15],
  ['laptop', [8, 32], [0.4, 2.5], 0.35],
  ['phone', [2, 8], [0.1, 0.8], 0.3],
];

/** A seeded swarm of `count` heterogeneous nodes and 4 models x 4 copies x 80 layers. */
export function largeSwarm(count: number, seed: number): { nodes: NodeProfile[]; models: ModelSpec[] } {
  const random = uniform(seed);
  const nodes: NodeProfile[] = [];
  for (let i = 0; i < count; i++) {
    let pick = random();
    const cls = CLASSES.find((c) => (pick -= c[3]) < 0) ?? (CLASSES[0] as (typeof CLASSES)[number]);
    const [name, [m0, m1], [s0, s1]] = cls;
    nodes.push({ id: `${name}-${i}`, memoryGb: Math.round(m0 + (m1 - m0) * random()), score: Math.round((s0 + (s1 - s0) * random()) * 100) / 100 });
  }
  const models: ModelSpec[] = [
    { id: 'base', layers: 80, layerGb: 0.5, pipelines: 4 },
    { id: 'code', layers: 80, layerGb: 0.5, pipelines: 4 },
    { id: 'vision', layers: 80, layerGb: 0.25, pipelines: 4 },
    { id: 'small', layers: 80, layerGb: 0.125, pipelines: 4 },
  ];
  return { nodes, models };
}

function formatTable(rows: readonly BenchRow[]): string {
  const fmt = (x: number | undefined) => (x === undefined ? '' : Math.abs(x) >= 100 ? x.toFixed(1) : x.toPrecision(4));
  const lines = [['name', 'size', 'median', 'unit', 'baseline', 'ratio', 'target', 'pass']];
  for (const r of rows) lines.push([r.name, r.size, fmt(r.median), r.unit, r.baselineName === undefined ? '' : `${fmt(r.baseline)} (${r.baselineName})`, fmt(r.ratio), r.target, r.pass ? 'PASS' : 'FAIL']);
  const widths = (lines[0] as string[]).map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return lines.map((l) => l.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

/** A side-by-side view: one line per topology with all four throughputs. */
function formatSideBySide(measured: readonly TopologyQuality[]): string {
  const lines = [['topology', 'ours', 'exo', 'petals', 'bound', 'mem-bound', 'ours/exo', 'ours/petals', 'ours/bound']];
  for (const q of measured) {
    const row = [q.topology, q.ours, q.exo, q.petals, q.bound, q.memoryBound, q.ours / q.exo, q.ours / q.petals, q.ours / q.bound];
    lines.push(row.map((v) => (typeof v === 'number' ? v.toFixed(3) : v)));
  }
  const widths = (lines[0] as string[]).map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return lines.map((l) => l.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  console.log(formatSideBySide(loadTopologies().map(measureTopology)));
  console.log();
  const rows = await planQualityBench();
  console.log(formatTable(rows));
  process.exitCode = rows.every((r) => r.pass) ? 0 : 1;
}
