/**
 * Throughput with every node's compute counted once (docs/cost.md "Counted once"), on the record:
 * for every committed topology, the README example and the multi-model swarms of
 * bench/multi-model.ts, the plan's layer-weighted throughput Σ over models of (throughput ×
 * layers) as a share of the compute bound Σ score — counted per copy (1 / slowest stage each, a
 * shared node once per copy: the figure the bench printed before) and counted once (the max-min
 * fair share of each node's speed) — for the planner that shares nodes between models (before)
 * and for planSwarm (disjoint copies on several models). Then each copy's stages against the
 * stages its own nodes' full memory needs, and planSwarm's time on 1,000 and 10,000 nodes, and on
 * 1,000 nodes with more wanted copies than nodes (packed copies).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { planSwarm } from '../src/index.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from '../src/index.js';
import { planSharedNodes } from '../src/core/plan.js';
import { fullCapacity } from '../src/core/plan-disjoint.js';
import { sharedThroughput } from '../src/core/shared-throughput.js';
import { heterogeneousNodes, multiModelSwarms, FOUR_MODELS, MANY_SMALL_COPIES } from './multi-model.js';
import { loadTopologies } from './planners/throughput.js';
import { largeSwarm } from './plan-quality.js';
import type { BenchRow } from './types.js';

/** Share of the compute bound planSwarm reaches, counted once, on multi-model swarms with memory to spare. */
export const ONCE_SHARE = 0.9;
/** A copy's stages at most this many times the stages its own nodes' full memory needs. */
export const FULL_MEMORY_FACTOR = 2;
/** planSwarm on 1,000 nodes × 4 models, and on 10,000, median milliseconds. */
export const PLAN_MS_1000 = 1000;
export const PLAN_MS_10000 = 10_000;

interface Swarm {
  readonly name: string;
  readonly nodes: readonly NodeProfile[];
  readonly models: readonly ModelSpec[];
  /** Multi-model with total memory at least twice what the wanted copies need: the targets apply. */
  readonly targets: boolean;
}

/** Σ over copies of layers / slowest stage: a node shared by k copies counted k times. */
export function perCopyLayerRate(plan: SwarmPlan, profiles: readonly NodeProfile[]): number {
  const score = new Map(profiles.map((p) => [p.id, p.score ?? 1] as const));
  const layers = new Map(plan.models.map((m) => [m.id, m.layers] as const));
  let sum = 0;
  for (const p of plan.pipelines) {
    let worst = 0;
    for (const s of p.stages) worst = Math.max(worst, (s.layerEnd - s.layerStart) / (score.get(s.nodeId) ?? 1));
    sum += (layers.get(p.modelId) ?? 0) / worst;
  }
  return sum;
}

/** The largest ratio over copies of stages to the fewest of its own nodes, largest first, whose full memory holds the model. */
export function worstFullMemoryRatio(plan: SwarmPlan, profiles: readonly NodeProfile[]): number {
  const memory = new Map(profiles.map((p) => [p.id, p.memoryGb] as const));
  const models = new Map(plan.models.map((m) => [m.id, m] as const));
  let worst = 0;
  for (const p of plan.pipelines) {
    const model = models.get(p.modelId) as ModelSpec;
    const caps = p.stages.map((s) => fullCapacity(memory.get(s.nodeId) ?? 0, model)).sort((a, b) => b - a);
    let held = 0;
    let need = 0;
    while (held < model.layers && need < caps.length) held += caps[need++] as number;
    worst = Math.max(worst, held >= model.layers ? p.stages.length / need : Number.POSITIVE_INFINITY);
  }
  return worst;
}

function swarms(): Swarm[] {
  const example = JSON.parse(readFileSync(fileURLToPath(new URL(examplePath(), import.meta.url)), 'utf8')) as { models: ModelSpec[]; nodes: NodeProfile[] };
  const wantedGb = (nodes: readonly NodeProfile[], models: readonly ModelSpec[]) => models.reduce((s, m) => s + (m.pipelines ?? 1) * m.layers * ((m.layerGb ?? 1) + (m.kvReserveGb ?? 0)), 0) * 2 <= nodes.reduce((s, n) => s + n.memoryGb, 0);
  return [
    ...loadTopologies().map((t) => ({ name: t.name, nodes: t.nodes, models: t.models, targets: false })),
    { name: 'examples/swarm.json', nodes: example.nodes, models: example.models, targets: wantedGb(example.nodes, example.models) },
    ...multiModelSwarms().map((s) => ({ ...s, targets: wantedGb(s.nodes, s.models) })),
    { name: '1000 nodes of five device classes, 4 models (the planning bench)', ...largeSwarm(1000, 42), targets: true },
  ];
}

/** examples/swarm.json from the sources (vitest) or from dist-bench/bench. */
function examplePath(): string {
  return import.meta.url.includes('/dist-bench/') ? '../../examples/swarm.json' : '../examples/swarm.json';
}

const r4 = (x: number) => Number(x.toPrecision(4));

/** The rows of the counted-once bench, in a stable order. */
export function countedOnceBench(): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const s of swarms()) {
    const before = planSharedNodes(s.nodes, { models: s.models });
    const after = planSwarm(s.nodes, { models: s.models });
    const once = sharedThroughput(after, s.nodes);
    const onceBefore = sharedThroughput(before, s.nodes);
    const perModel = [...once.models].map(([id, t]) => `${id} ${after.pipelines.filter((p) => p.modelId === id).length} copies ${r4(t)}`).join(', ');
    rows.push({
      name: `plan throughput counted once / ${s.name}`,
      size: `${s.nodes.length} nodes, ${s.models.length} model${s.models.length === 1 ? '' : 's'}: ${perModel}; planner before: per-copy count ${r4(perCopyLayerRate(before, s.nodes) / once.bound)}, counted once ${r4(onceBefore.layerRate / once.bound)} of the bound`,
      median: r4(once.layerRate / once.bound),
      unit: 'share of Σ score',
      baselineName: 'per-copy count of the planner before (Σ layers / slowest stage)',
      baseline: r4(perCopyLayerRate(before, s.nodes) / once.bound),
      ratio: r4(once.layerRate / perCopyLayerRate(before, s.nodes)),
      target: s.targets ? `counted once >= ${ONCE_SHARE} of the bound` : '(reference) the figure counted once and per copy',
      pass: !s.targets || once.layerRate >= ONCE_SHARE * once.bound,
    });
    if (s.models.length > 1) {
      const worst = worstFullMemoryRatio(after, s.nodes);
      rows.push({
        name: `copy stages vs its own full-memory stages / ${s.name}`,
        size: `${after.pipelines.length} copies, longest ${Math.max(...after.pipelines.map((p) => p.stages.length))} stages; planner before: worst ${r4(worstFullMemoryRatio(before, s.nodes))} x, longest ${Math.max(...before.pipelines.map((p) => p.stages.length))}`,
        median: r4(worst),
        unit: 'x',
        baselineName: 'planner before',
        baseline: r4(worstFullMemoryRatio(before, s.nodes)),
        ratio: r4(worst / FULL_MEMORY_FACTOR),
        target: s.targets ? `worst <= ${FULL_MEMORY_FACTOR}` : '(reference)',
        pass: !s.targets || worst <= FULL_MEMORY_FACTOR,
      });
    }
  }
  for (const [count, limit, runs] of [[1000, PLAN_MS_1000, 11], [10_000, PLAN_MS_10000, 3]] as const) {
    const nodes = heterogeneousNodes(count, 11, [4, 24], [1, 9]);
    const ms = medianMs(() => planSwarm(nodes, { models: FOUR_MODELS }), runs);
    rows.push({ name: 'planSwarm, several models', size: `${count} nodes 4-24 GB, 4 models x 4 copies x 80 layers`, median: r4(ms), unit: 'ms', target: `<= ${limit} ms`, pass: ms <= limit });
  }
  // More wanted copies than nodes: whole copies packed (plan-packed.ts).
  const nodes = heterogeneousNodes(1000, 11, [4, 24], [1, 9]);
  const ms = medianMs(() => planSwarm(nodes, { models: MANY_SMALL_COPIES }), 11);
  rows.push({ name: 'planSwarm, several models, copies packed', size: '1000 nodes 4-24 GB, 4 models x 400 copies x 24 layers', median: r4(ms), unit: 'ms', target: `<= ${PLAN_MS_1000} ms`, pass: ms <= PLAN_MS_1000 });
  return rows;
}

function medianMs(run: () => unknown, runs: number): number {
  run();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? Number.NaN;
}
