/**
 * The yardstick of the plan-quality bench: a copy's throughput is 1 / (its slowest stage's
 * time), a stage's time being its layers / its node's score, a node's speed shared between the
 * copies it serves (counted once, docs/cost.md); a plan's throughput for one model is the sum
 * over its copies. Also the compute bound and the topology files.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ModelSpec, NodeProfile, Pipeline } from '../../src/index.js';
import { layerFootprint } from '../../src/core/plan-disjoint.js';
import { sharedThroughput } from '../../src/core/shared-throughput.js';

/** A committed topology: the `{ models, nodes }` file of swarm-sim, plus its file name. */
export interface Topology {
  /** File name without `.json`; a name ending in `-memory-bound` marks a topology whose compute bound memory makes unreachable. */
  readonly name: string;
  readonly description?: string;
  readonly models: readonly ModelSpec[];
  readonly nodes: readonly NodeProfile[];
}

const EPS = 1e-9;

/** Layers of `model` a node can hold: floor(memoryGb / (layerGb + kvReserveGb)), a layer with its KV reserve. */
export function capacityOf(node: NodeProfile, model: ModelSpec): number {
  return Math.floor(node.memoryGb / layerFootprint(model) + EPS);
}

/** Time of a copy's slowest stage (layers / score); Infinity for an empty copy. */
export function copyTime(pipeline: Pipeline, scoreOf: ReadonlyMap<string, number>): number {
  let worst = 0;
  for (const s of pipeline.stages) worst = Math.max(worst, (s.layerEnd - s.layerStart) / (scoreOf.get(s.nodeId) ?? 1));
  return pipeline.stages.length === 0 ? Infinity : worst;
}

/** Σ over the copies of `modelId` of 1 / (slowest stage time): a node shared by k copies counted k times. */
export function perCopyThroughput(pipelines: readonly Pipeline[], profiles: readonly NodeProfile[], modelId: string): number {
  const scoreOf = new Map(profiles.map((p) => [p.id, p.score ?? 1]));
  return pipelines.filter((p) => p.modelId === modelId).reduce((sum, p) => sum + 1 / copyTime(p, scoreOf), 0);
}

/**
 * The throughput of `modelId` with every node's compute counted once across all of `pipelines`
 * (docs/cost.md "Counted once"): the sum of its copies' max-min fair rates. Where no node serves
 * two copies — every single-model plan — it is {@link perCopyThroughput}.
 */
export function planThroughput(pipelines: readonly Pipeline[], profiles: readonly NodeProfile[], modelId: string): number {
  const layers = new Map<string, number>();
  for (const p of pipelines) for (const s of p.stages) layers.set(p.modelId, Math.max(layers.get(p.modelId) ?? 0, s.layerEnd));
  const models = [...layers].map(([id, l]) => ({ id, layers: l }));
  return sharedThroughput({ models, pipelines }, profiles).models.get(modelId) ?? 0;
}

/**
 * Σ score / layers over the nodes that can hold at least one layer: no plan of one model beats
 * it, since a copy on nodes N needs layers / Σ_N score of time at its slowest stage at best.
 */
export function computeBound(profiles: readonly NodeProfile[], model: ModelSpec): number {
  return profiles.filter((p) => capacityOf(p, model) >= 1).reduce((s, p) => s + (p.score ?? 1), 0) / model.layers;
}

/**
 * An upper bound that counts memory: no plan of `model` beats it. Let r1 be the throughput of the
 * best single (fractional) pipeline over every node — the solution of Σ min(cap, T · score) =
 * layers, r1 = 1 / T. No copy is faster than r1, and a node holding x layers in a copy of
 * throughput r works x · r <= min(score, cap · r1) layer-passes per unit of time; the copies
 * together do layers · Σ r of them. Hence Σ r <= min(Σ min(score, cap · r1) / layers, copies · r1).
 */
export function memoryAwareBound(profiles: readonly NodeProfile[], model: ModelSpec): number {
  const layers = model.layers;
  const nodes = profiles.map((p) => ({ score: p.score ?? 1, cap: Math.min(capacityOf(p, model), layers) })).filter((n) => n.cap >= 1);
  // Fractional water level: nodes saturate in order of cap / score.
  nodes.sort((a, b) => a.cap / a.score - b.cap / b.score);
  let saturated = 0;
  let freeScore = nodes.reduce((s, n) => s + n.score, 0);
  let level = Infinity;
  for (const n of nodes) {
    const t = (layers - saturated) / freeScore;
    if (t <= n.cap / n.score) {
      level = t;
      break;
    }
    saturated += n.cap;
    freeScore -= n.score;
  }
  if (level === Infinity) return 0;
  const r1 = 1 / level;
  const work = nodes.reduce((s, n) => s + Math.min(n.score, n.cap * r1), 0);
  return Math.min(work / layers, (model.pipelines ?? 1) * r1);
}

/**
 * Whether memory lets a plan reach the compute bound at all: false when some node fills up before
 * reaching its speed share even with every node in one pipeline (then it does in any copy).
 * Topologies where this is false are committed with a name ending in `-memory-bound`.
 */
export function memoryAllowsBound(profiles: readonly NodeProfile[], model: ModelSpec): boolean {
  return memoryAwareBound(profiles, model) >= computeBound(profiles, model) * (1 - 1e-9);
}

/** The directory of the committed topologies, from the sources (vitest) or from dist/bench. */
export function topologiesDir(): string {
  const candidates = ['../topologies/', '../../../bench/topologies/'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  const found = candidates.find((dir) => existsSync(dir));
  if (found === undefined) throw new Error(`bench/topologies not found (looked in ${candidates.join(', ')})`);
  return found;
}

/** Every committed topology, in file-name order. */
export function loadTopologies(dir: string = topologiesDir()): Topology[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const value = JSON.parse(readFileSync(`${dir}${file}`, 'utf8')) as Omit<Topology, 'name'>;
      if (!Array.isArray(value.models) || !Array.isArray(value.nodes)) throw new Error(`${file}: expected { models, nodes }`);
      return { name: file.slice(0, -'.json'.length), ...value };
    });
}
