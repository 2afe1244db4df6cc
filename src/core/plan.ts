import { PlanError } from './errors.js';
import { byCapability, improvePartition, type Candidate } from './plan-search.js';
import type { ModelSpec, NodeProfile, Pipeline, Stage, SwarmPlan } from './types.js';
import { modelIssues, profileIssues, validatePlan } from './validate.js';

/** What to plan: the models, each with its number of copies. */
export interface PlanConfig {
  readonly models: readonly ModelSpec[];
}

export { byCapability, type Candidate } from './plan-search.js';

const EPS = 1e-9;

/**
 * Plans every copy of every model (SPEC §2): copies of one model on disjoint nodes, layers
 * split so that each copy's slowest stage (layers / score) is as fast as memory allows, node
 * memory counted across every model. Deterministic; never returns a partial plan.
 *
 * @throws {PlanError} `InvalidInput` for bad profiles or models, `InsufficientCapacity`
 * naming the model and the shortfall when the swarm cannot hold every copy.
 * @example
 * const plan = planSwarm([{ id: 'gpu', memoryGb: 24, score: 10 }], { models: [{ id: 'base', layers: 12 }] });
 */
export function planSwarm(profiles: readonly NodeProfile[], config: PlanConfig): SwarmPlan {
  const issues = [...profileIssues(profiles), ...modelIssues(config?.models)];
  if (issues.length > 0) throw new PlanError('InvalidInput', issues.map((i) => i.message).join('; '));

  const freeGb = new Map<string, number>(profiles.map((p) => [p.id, p.memoryGb]));
  const models = config.models.map(copyModel);
  const pipelines: Pipeline[] = [];
  for (const model of models) {
    const layerGb = model.layerGb ?? 1;
    const candidates = profiles
      .map((p): Candidate => ({ id: p.id, score: p.score ?? 1, cap: Math.floor((freeGb.get(p.id) ?? 0) / layerGb + EPS) }))
      .filter((c) => c.cap > 0);
    const groups = partitionCopies(candidates, model);
    groups.forEach((group, copy) => {
      const stages = splitLayers(group, model.layers);
      for (const s of stages) freeGb.set(s.nodeId, (freeGb.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * layerGb);
      pipelines.push({ id: `${model.id}/${copy}`, modelId: model.id, stages });
    });
  }
  const plan: SwarmPlan = { models, pipelines };
  const invalid = validatePlan(plan, profiles);
  if (invalid.length > 0) {
    // A planner bug, not a user error: refuse rather than hand out a broken plan.
    throw new PlanError('InvalidPlan', `planner produced an invalid plan: ${invalid.map((i) => i.message).join('; ')}`);
  }
  return plan;
}

/** The model's known fields, copied once (a caller's extra keys, getters or BigInts never reach the plan). */
function copyModel(m: ModelSpec): ModelSpec {
  const { id, layers, layerGb, pipelines, kind, fallback } = m;
  return {
    id,
    layers,
    ...(layerGb === undefined ? {} : { layerGb }),
    ...(pipelines === undefined ? {} : { pipelines }),
    ...(kind === undefined ? {} : { kind }),
    ...(fallback === undefined ? {} : { fallback }),
  };
}


/**
 * Deals candidates to `copies` disjoint groups: fastest first, each to the group with the least
 * capability so far, then moves or swaps memory-rich nodes until every group can hold the model,
 * then improves the total throughput Σ 1 / T by local search ({@link improvePartition}).
 */
function partitionCopies(candidates: readonly Candidate[], model: ModelSpec): Candidate[][] {
  const copies = model.pipelines ?? 1;
  const layers = model.layers;
  const totalCap = candidates.reduce((s, c) => s + Math.min(c.cap, layers), 0);
  const shortfall = (have: number) =>
    new PlanError(
      'InsufficientCapacity',
      `model "${model.id}" needs ${copies} disjoint ${copies === 1 ? 'copy' : 'copies'} of ${layers} layers ` +
        `(${copies * layers} layers of ${model.layerGb ?? 1} GB) but the free memory holds ${have}: short by ${copies * layers - have} layers`,
    );
  if (candidates.length < copies) {
    // Disjoint copies need at least one node each: memory is not the missing thing, nodes are.
    throw new PlanError(
      'InsufficientCapacity',
      `model "${model.id}" needs ${copies} disjoint copies but only ${candidates.length} ${candidates.length === 1 ? 'node has' : 'nodes have'} ` +
        `free memory for a layer of ${model.layerGb ?? 1} GB: short by ${copies - candidates.length} ${copies - candidates.length === 1 ? 'node' : 'nodes'}`,
    );
  }
  if (totalCap < copies * layers) throw shortfall(totalCap);

  const sorted = [...candidates].sort(byCapability);
  const groups: Candidate[][] = Array.from({ length: copies }, () => []);
  const scoreSum = new Array<number>(copies).fill(0);
  const capSum = new Array<number>(copies).fill(0);
  for (const c of sorted) {
    let best = 0;
    for (let g = 1; g < copies; g++) {
      if ((scoreSum[g] ?? 0) < (scoreSum[best] ?? 0) - EPS || (Math.abs((scoreSum[g] ?? 0) - (scoreSum[best] ?? 0)) <= EPS && (capSum[g] ?? 0) < (capSum[best] ?? 0))) best = g;
    }
    groups[best]?.push(c);
    scoreSum[best] = (scoreSum[best] ?? 0) + c.score;
    capSum[best] = (capSum[best] ?? 0) + Math.min(c.cap, layers);
  }
  const capOf = (g: readonly Candidate[]) => g.reduce((s, c) => s + Math.min(c.cap, layers), 0);

  // Memory repair: each step strictly raises a deficit group's capacity without making a donor short.
  for (let guard = 0; guard < candidates.length * copies * 4; guard++) {
    const deficit = groups.findIndex((g) => capOf(g) < layers);
    if (deficit === -1) break;
    const need = groups[deficit] as Candidate[];
    let moved = false;
    // 1. Move the most memory-per-score node a donor can spare.
    let bestMove: { donor: number; index: number; ratio: number } | undefined;
    groups.forEach((donor, d) => {
      if (d === deficit) return;
      const surplus = capOf(donor) - layers;
      donor.forEach((c, index) => {
        const cap = Math.min(c.cap, layers);
        if (cap > surplus || donor.length === 1) return;
        const ratio = cap / c.score;
        if (bestMove === undefined || ratio > bestMove.ratio + EPS) bestMove = { donor: d, index, ratio };
      });
    });
    if (bestMove !== undefined) {
      const [c] = (groups[bestMove.donor] as Candidate[]).splice(bestMove.index, 1);
      if (c) need.push(c);
      moved = true;
    } else {
      // 2. Swap a small node of the deficit group for a bigger one the donor can spare.
      let bestSwap: { donor: number; a: number; b: number; gain: number } | undefined;
      groups.forEach((donor, d) => {
        if (d === deficit) return;
        const surplus = capOf(donor) - layers;
        need.forEach((a, ai) => {
          donor.forEach((b, bi) => {
            const gain = Math.min(b.cap, layers) - Math.min(a.cap, layers);
            if (gain <= 0 || gain > surplus) return;
            if (bestSwap === undefined || gain > bestSwap.gain) bestSwap = { donor: d, a: ai, b: bi, gain };
          });
        });
      });
      if (bestSwap !== undefined) {
        const donor = groups[bestSwap.donor] as Candidate[];
        const a = need[bestSwap.a] as Candidate;
        const b = donor[bestSwap.b] as Candidate;
        need[bestSwap.a] = b;
        donor[bestSwap.b] = a;
        moved = true;
      }
    }
    if (!moved) break;
  }
  const short = groups.findIndex((g) => capOf(g) < layers);
  if (short !== -1) throw shortfall(groups.reduce((s, g) => s + Math.min(capOf(g), layers), 0));
  return improvePartition(groups, layers).map((g) => [...g].sort(byCapability));
}

/**
 * Splits `layers` over the nodes of one copy so that the slowest stage (layers / score) is as
 * fast as possible within each node's capacity: water-filling, one layer at a time to the node
 * whose stage stays fastest. Nodes that receive no layer are not stages.
 */
export function splitLayers(group: readonly Candidate[], layers: number): Stage[] {
  const counts = new Array<number>(group.length).fill(0);
  for (let l = 0; l < layers; l++) {
    let best = -1;
    let bestTime = Infinity;
    for (let i = 0; i < group.length; i++) {
      const c = group[i] as Candidate;
      const n = counts[i] ?? 0;
      if (n >= c.cap) continue;
      const time = (n + 1) / c.score;
      if (time < bestTime - EPS) {
        best = i;
        bestTime = time;
      }
    }
    if (best === -1) throw new PlanError('InsufficientCapacity', `a copy ran out of memory at layer ${l} of ${layers}`);
    counts[best] = (counts[best] ?? 0) + 1;
  }
  const stages: Stage[] = [];
  let next = 0;
  group.forEach((c, i) => {
    const n = counts[i] ?? 0;
    if (n === 0) return;
    stages.push({ nodeId: c.id, layerStart: next, layerEnd: next + n });
    next += n;
  });
  return stages;
}
