import { describeValue } from './describe.js';
import { PlanError } from './errors.js';
import { partitionCopies } from './plan-balanced.js';
import { disjointCopies, fullCapacity, layerFootprint } from './plan-disjoint.js';
import { packedCopies, type PackedCopy } from './plan-packed.js';
import { byCapability, WaterFill, type Candidate } from './plan-search.js';
import { HOP_SHARE, memoryStagesOf, shortCopies, withinFactor } from './plan-short.js';
import { worthSharing } from './plan-sharing.js';
import { splitLayers } from './split-layers.js';
import type { ModelSpec, NodeProfile, Pipeline, SwarmPlan } from './types.js';
import { modelIssues, profileIssues, validatePlan } from './validate.js';

/** What to plan: the models, each with its number of copies. */
export interface PlanConfig {
  readonly models: readonly ModelSpec[];
  /**
   * Whether nodes the wanted copies leave form further copies (each model's `pipelines` is then
   * a minimum). `false` plans exactly `pipelines` copies per model and keeps the rest as spares
   * for splices and relocation. @defaultValue true
   */
  readonly furtherCopies?: boolean;
}

export { byCapability, type Candidate } from './plan-search.js';
export { splitLayers } from './split-layers.js';

const EPS = 1e-9;

/**
 * Plans every copy of every model (docs/design.md §2, docs/cost.md). One model: copies on
 * disjoint nodes, each short — built from the fastest free nodes until it holds the model, a
 * further node joining only when it adds more throughput there than in a balanced copy of its
 * own, plus a hop's worth — and layers split so that each copy's slowest stage (layers / score) is
 * as fast as memory allows; `pipelines` is a minimum: the nodes left form further copies or join
 * a copy whose slowest stage they cut by more than a hop's worth, unless `furtherCopies` is false.
 * Several models: every node in at most one copy (docs/cost.md "Several models: disjoint
 * copies"), each copy exactly as long as its own memory needs, further copies by demand share;
 * when disjoint nodes cannot hold the wanted copies, whole copies packed by free memory
 * (plan-packed.ts); only when packing cannot place them either do models share nodes under the
 * planner of one model's copies, memory counted across them, with the rule of plan-sharing.ts. A
 * layer takes `layerGb + kvReserveGb`. A model's `stageFactor` bounds its copies' stages by its
 * own nodes' memory, full memory on several models (docs/cost.md "A stage bound").
 * Deterministic; never returns a partial plan.
 *
 * @throws {PlanError} `InvalidInput` for bad profiles or models, `InsufficientCapacity`
 * naming the model and the shortfall when the swarm cannot hold every copy.
 * @example
 * const plan = planSwarm([{ id: 'gpu', memoryGb: 24, score: 10 }], { models: [{ id: 'base', layers: 12 }] });
 */
export function planSwarm(profiles: readonly NodeProfile[], config: PlanConfig): SwarmPlan {
  const issues = [...profileIssues(profiles), ...modelIssues(config?.models)];
  if (issues.length > 0) throw new PlanError('InvalidInput', issues.map((i) => i.message).join('; '));
  const furtherCopies: unknown = config.furtherCopies;
  if (furtherCopies !== undefined && typeof furtherCopies !== 'boolean') {
    throw new PlanError('InvalidInput', `config field "furtherCopies" must be a boolean, got ${describeValue(furtherCopies)}`);
  }
  const models = config.models.map(copyModel);
  if (models.length > 1) {
    // Several models: disjoint copies, each node's compute in one copy (docs/cost.md).
    const order = [...models].sort((a, b) => kindRank(models, a) - kindRank(models, b));
    const copies = disjointCopies(profiles, models, order, furtherCopies !== false);
    if (copies !== undefined) {
      const planned = emptyPlanned(profiles);
      for (const { model, group } of copies) place(planned, model, group);
      return finish(models, planned.pipelines, profiles);
    }
    // More wanted copies than disjoint nodes hold: whole copies packed by free memory (plan-packed.ts).
    const packed = packedCopies(profiles, models, order, furtherCopies !== false);
    if (packed !== undefined) return finish(models, numbered(packed), profiles);
  }
  return finish(models, planShared(profiles, models, furtherCopies !== false, true).pipelines, profiles);
}

/**
 * The planner where copies may share nodes: one model's copies (which never share), or the wanted
 * copies of several models when neither disjoint nor packed copies hold them (memory-tight swarms).
 */
function planShared(profiles: readonly NodeProfile[], models: readonly ModelSpec[], further: boolean, sharingRule: boolean): Planned {
  let planned: Planned;
  try {
    planned = planWanted(profiles, models, 'short');
  } catch (error) {
    // Short copies took memory a later model needed: the balanced partition never fails where a plan exists.
    if (!(error instanceof PlanError) || error.code !== 'InsufficientCapacity') throw error;
    planned = planWanted(profiles, models, 'balanced');
  }
  if (further) addFurtherCopies(profiles, models, planned, sharingRule);
  return planned;
}

/**
 * The planner of shared nodes for every swarm, several models included, without the sharing rule
 * (plan-sharing.ts): what planSwarm did before several models got disjoint copies. Kept for the
 * bench, which records the figures before and after (bench/counted-once.ts).
 * @internal
 */
export function planSharedNodes(profiles: readonly NodeProfile[], config: PlanConfig): SwarmPlan {
  const models = config.models.map(copyModel);
  return finish(models, planShared(profiles, models, config.furtherCopies !== false, false).pipelines, profiles);
}

/** Packed copies as pipelines, each model's numbered in order. */
function numbered(copies: readonly PackedCopy[]): Pipeline[] {
  const count = new Map<string, number>();
  return copies.map(({ model, stages }) => {
    const k = count.get(model.id) ?? 0;
    count.set(model.id, k + 1);
    return { id: `${model.id}/${k}`, modelId: model.id, stages };
  });
}

function emptyPlanned(profiles: readonly NodeProfile[]): Planned {
  return { freeGb: new Map(profiles.map((p) => [p.id, p.memoryGb])), pipelines: [], members: [], count: new Map() };
}

/**
 * The planner before short copies (the "before" of docs/cost.md's comparison): exactly `pipelines` copies per model,
 * every free node dealt to a copy and the layers water-filled over it. Kept for the plan-quality
 * bench, which records per-token time and throughput before and after.
 * @internal
 */
export function planBalanced(profiles: readonly NodeProfile[], config: PlanConfig): SwarmPlan {
  const models = config.models.map(copyModel);
  return finish(models, planWanted(profiles, models, 'balanced').pipelines, profiles);
}

function finish(models: ModelSpec[], pipelines: Pipeline[], profiles: readonly NodeProfile[]): SwarmPlan {
  const plan: SwarmPlan = { models, pipelines };
  const invalid = validatePlan(plan, profiles);
  if (invalid.length > 0) {
    // A planner bug, not a user error: refuse rather than hand out a broken plan.
    throw new PlanError('InvalidPlan', `planner produced an invalid plan: ${invalid.map((i) => i.message).join('; ')}`);
  }
  return plan;
}

interface Planned {
  readonly freeGb: Map<string, number>;
  readonly pipelines: Pipeline[];
  /** Each pipeline's nodes with their scores, by pipeline index. */
  readonly members: Candidate[][];
  /** Copies planned so far per model (the next copy's index). */
  readonly count: Map<string, number>;
}

/**
 * The nodes with room for a layer of `model`, each with what it can still hold; on several models
 * also what its full memory holds, which a stage bound reads (docs/cost.md "A stage bound").
 */
function candidatesFor(profiles: readonly NodeProfile[], freeGb: ReadonlyMap<string, number>, model: ModelSpec, several: boolean, exclude?: ReadonlySet<string>): Candidate[] {
  const layerGb = layerFootprint(model);
  return profiles
    .filter((p) => exclude === undefined || !exclude.has(p.id))
    .map((p): Candidate => ({ id: p.id, score: p.score ?? 1, cap: Math.floor((freeGb.get(p.id) ?? 0) / layerGb + EPS), ...(several ? { full: fullCapacity(p.memoryGb, model) } : {}) }))
    .filter((c) => c.cap > 0);
}

function place(planned: Planned, model: ModelSpec, group: readonly Candidate[]): void {
  const layerGb = layerFootprint(model);
  const stages = splitLayers([...group].sort(byCapability), model.layers);
  for (const s of stages) planned.freeGb.set(s.nodeId, (planned.freeGb.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * layerGb);
  const copy = planned.count.get(model.id) ?? 0;
  planned.count.set(model.id, copy + 1);
  planned.pipelines.push({ id: `${model.id}/${copy}`, modelId: model.id, stages });
  planned.members.push(stages.map((st) => group.find((c) => c.id === st.nodeId) as Candidate));
}

/** Undoes the last {@link place} of `model`. */
function unplace(planned: Planned, model: ModelSpec): void {
  const p = planned.pipelines.pop() as Pipeline;
  planned.members.pop();
  for (const s of p.stages) planned.freeGb.set(s.nodeId, (planned.freeGb.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * layerFootprint(model));
  planned.count.set(model.id, (planned.count.get(model.id) ?? 1) - 1);
}

/**
 * A node no copy of the model took — it could not form a copy of its own — joins the copy where
 * it raises throughput most, if it cuts that copy's slowest stage by more than a hop's worth
 * ({@link HOP_SHARE}); else it waits as a spare.
 */
function joinSpares(profiles: readonly NodeProfile[], model: ModelSpec, planned: Planned, models: readonly ModelSpec[], sharingRule: boolean): void {
  const layerGb = layerFootprint(model);
  const copies: number[] = [];
  const used = new Set<string>();
  planned.pipelines.forEach((p, i) => {
    if (p.modelId !== model.id) return;
    copies.push(i);
    for (const s of p.stages) used.add(s.nodeId);
  });
  if (copies.length === 0) return;
  const memory = new Map(models.length > 1 ? profiles.map((p) => [p.id, fullCapacity(p.memoryGb, model)] as const) : []);
  /** The copy's nodes with what each could hold: its layers in the copy plus its free memory. */
  const groupOf = (i: number): Candidate[] =>
    (planned.pipelines[i] as Pipeline).stages.map((st, k) => ({
      id: st.nodeId,
      score: (planned.members[i] as Candidate[])[k]?.score ?? 1,
      cap: st.layerEnd - st.layerStart + Math.floor((planned.freeGb.get(st.nodeId) ?? 0) / layerGb + EPS),
      ...(memory.size > 0 ? { full: memory.get(st.nodeId) ?? 0 } : {}),
    }));
  const times = new Map(copies.map((i) => [i, copyTime(groupOf(i), model.layers)]));
  let misses = 0;
  for (const x of candidatesFor(profiles, planned.freeGb, model, models.length > 1, used).sort(byCapability)) {
    if (misses >= MAX_SPARE_MISSES) break;
    let best: { i: number; gain: number; group: Candidate[] } | undefined;
    // The slowest copies only: a bounded search that keeps 1,000-node swarms in milliseconds.
    const slowest = [...copies].sort((a, b) => (times.get(b) ?? 0) - (times.get(a) ?? 0) || a - b).slice(0, SPARE_COPIES);
    for (const i of slowest) {
      const group = groupOf(i);
      const before = times.get(i) ?? Infinity;
      if (model.stageFactor !== undefined && group.length + 1 > model.stageFactor * memoryStagesOf([...group, x], model.layers)) continue;
      const after = copyTime([...group, x], model.layers);
      const gain = 1 / after - 1 / before;
      if (after * (1 + HOP_SHARE) < before && (best === undefined || gain > best.gain)) best = { i, gain, group: [...group, x] };
    }
    if (best === undefined) {
      misses++;
      continue;
    }
    const old = planned.pipelines[best.i] as Pipeline;
    const stages = splitLayers([...best.group].sort(byCapability), model.layers);
    const resplit = { id: old.id, modelId: old.modelId, stages };
    if (sharingRule && !worthSharing(models, profiles, planned.pipelines, planned.pipelines.map((q, k) => (k === best.i ? resplit : q)), best.i)) {
      misses++;
      continue;
    }
    misses = 0;
    for (const s of old.stages) planned.freeGb.set(s.nodeId, (planned.freeGb.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * layerGb);
    for (const s of stages) planned.freeGb.set(s.nodeId, (planned.freeGb.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * layerGb);
    planned.pipelines[best.i] = resplit;
    planned.members[best.i] = stages.map((st) => best.group.find((c) => c.id === st.nodeId) as Candidate);
    times.set(best.i, copyTime(groupOf(best.i), model.layers));
  }
}

/** Copies a spare is priced against (the slowest ones). */
const SPARE_COPIES = 16;

/** Spares tried in a row without joining a copy before the search stops. */
const MAX_SPARE_MISSES = 8;

/** The slowest stage of the water-filled split of `group` (Infinity if it cannot hold the model). */
function copyTime(group: readonly Candidate[], layers: number): number {
  const sorted = [...group].sort(byCapability);
  const fill = new WaterFill(Float64Array.from(sorted, (c) => c.score), Int32Array.from(sorted, (c) => Math.min(c.cap, layers)), layers);
  return fill.time(sorted.map((_, i) => i), -1, -1, false);
}

/** Each model's wanted copies, in model order: short copies, or the balanced partition. */
function planWanted(profiles: readonly NodeProfile[], models: readonly ModelSpec[], how: 'short' | 'balanced'): Planned {
  const planned = emptyPlanned(profiles);
  for (const model of models) {
    const candidates = candidatesFor(profiles, planned.freeGb, model, models.length > 1);
    const wanted = model.pipelines ?? 1;
    const factor = model.stageFactor;
    let groups = how === 'short' ? shortCopies(candidates, model.layers, wanted, factor) : [];
    // Greedy short copies can strand memory: then the copies built without the bound, else the
    // balanced partition, which places every copy that fits; a stage bound trims them after (a
    // copy that holds the model can always lose members until no member can leave, and such a
    // copy has exactly its memory stages).
    if (how === 'short' && groups.length < wanted && factor !== undefined) groups = shortCopies(candidates, model.layers, wanted);
    if (groups.length < wanted) groups = partitionCopies(candidates, model);
    if (factor !== undefined) groups = groups.map((g) => withinFactor(g, model.layers, factor));
    for (const group of groups) place(planned, model, group);
  }
  return planned;
}

/**
 * Further short copies from the memory left, the base model first, then the experts in order (the
 * planner of shared nodes; several models' disjoint copies use demand share, plan-disjoint.ts).
 */
function addFurtherCopies(profiles: readonly NodeProfile[], models: readonly ModelSpec[], planned: Planned, sharingRule: boolean): void {
  const order = [...models].sort((a, b) => kindRank(models, a) - kindRank(models, b));
  for (const model of order) {
    const used = new Set<string>();
    for (const p of planned.pipelines) if (p.modelId === model.id) for (const s of p.stages) used.add(s.nodeId);
    for (const group of shortCopies(candidatesFor(profiles, planned.freeGb, model, models.length > 1, used), model.layers, Number.POSITIVE_INFINITY, model.stageFactor)) {
      const before = [...planned.pipelines];
      place(planned, model, group);
      // Several models: a copy on nodes that serve another model must pay for its hops (plan-sharing.ts).
      if (sharingRule && !worthSharing(models, profiles, before, planned.pipelines, before.length)) {
        unplace(planned, model);
        break;
      }
    }
    joinSpares(profiles, model, planned, models, sharingRule);
  }
}

/** -1 for the base model, else the model's position: the order further copies are made in. */
function kindRank(models: readonly ModelSpec[], model: ModelSpec): number {
  const i = models.indexOf(model);
  return (model.kind ?? (i === 0 ? 'base' : 'expert')) === 'base' ? -1 : i;
}

/** The model's known fields, copied once (a caller's extra keys, getters or BigInts never reach the plan). */
function copyModel(m: ModelSpec): ModelSpec {
  const { id, layers, layerGb, pipelines, kind, fallback, stageFactor, kvReserveGb, kvGbPerToken } = m;
  return {
    id,
    layers,
    ...(layerGb === undefined ? {} : { layerGb }),
    ...(pipelines === undefined ? {} : { pipelines }),
    ...(kind === undefined ? {} : { kind }),
    ...(fallback === undefined ? {} : { fallback }),
    ...(stageFactor === undefined ? {} : { stageFactor }),
    ...(kvReserveGb === undefined ? {} : { kvReserveGb }),
    ...(kvGbPerToken === undefined ? {} : { kvGbPerToken }),
  };
}
