import { describeValue, isRecordLike } from './describe.js';
import { PlanError, SwarmError } from './errors.js';
import { mergeAdjacent } from './failover.js';
import { byCapability, splitLayers } from './plan.js';
import { assertPlanShapeOnce, isIntact, planIndex } from './plan-index.js';
import { ownValue } from './records.js';
import { PLAN_LIMITS, profileIssues } from './validate.js';
import { HOP_SHARE, memoryStagesOf, shortCopies } from './plan-short.js';
import { fullCapacity, layerFootprint } from './plan-disjoint.js';
import { busyNodes, layerRate, leastLoss } from './growth-choice.js';
import type { GrowthResult, GrowthRole, IdSource, ModelSpec, NodeProfile, NodeStates, Pipeline, Relocation, RetirementResult, Stage, SwarmPlan } from './types.js';

/**
 * The telomerase: the growth component. It decides what a newcomer does (restore a missing copy,
 * add a copy, host an expert, or wait as a spare) and relocates the layers of a retiring node.
 * Pure but for the ids it mints for new pipelines. Existing pipelines are never changed by
 * growth except a broken one that the newcomer restores.
 */

/** What growth decided, before the Swarm applies it. */
export interface GrowthDecision extends GrowthResult {
  readonly plan: SwarmPlan;
}

/** What retirement decided, before the Swarm applies it. */
export interface RetirementDecision extends RetirementResult {
  readonly plan: SwarmPlan;
}

/**
 * Checks what the exported telomerase functions are handed, so a JavaScript caller's mistake is
 * a typed error, never a TypeError from deep inside.
 * @throws {PlanError} `InvalidPlan` / `InvalidInput` for a bad plan or profiles; {@link SwarmError} `InvalidInput` otherwise.
 */
function checkArgs(where: string, plan: unknown, profiles: unknown, nodes: unknown): void {
  assertPlanShapeOnce(plan as SwarmPlan);
  const issues = profileIssues(profiles as readonly NodeProfile[]);
  if (issues.length > 0) throw new PlanError('InvalidInput', `${where}: ${issues.map((i) => i.message).join('; ')}`);
  if (!isRecordLike(nodes)) throw new SwarmError('InvalidInput', `${where}: "nodes" must be an object of telemetry by node id, got ${describeValue(nodes)}`);
}

/** Memory each node has left once the plan's stages are counted, in GB. */
function freeMemory(plan: SwarmPlan, profiles: readonly NodeProfile[]): Map<string, number> {
  const free = new Map(profiles.map((p) => [p.id, p.memoryGb] as const));
  const models = planIndex(plan).models;
  for (const p of plan.pipelines) {
    const model = models.get(p.modelId);
    const layerGb = model === undefined ? 1 : layerFootprint(model);
    for (const s of p.stages) free.set(s.nodeId, (free.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * layerGb);
  }
  return free;
}

const capOf = (free: Map<string, number>, id: string, model: ModelSpec) => Math.floor((free.get(id) ?? 0) / layerFootprint(model) + 1e-9);

/** Nodes of a model's pipelines. */
function nodesOfModel(plan: SwarmPlan, modelId: string): Set<string> {
  const used = new Set<string>();
  for (const p of planIndex(plan).pipelinesByModel.get(modelId) ?? []) for (const s of p.stages) used.add(s.nodeId);
  return used;
}

/**
 * A new short copy of `model` from the newcomer and idle live nodes (nodes in no pipeline of the
 * model, with memory left), built as the planner builds further copies (fastest first until a
 * copy holds the model, a slower node joining only when worth its hop; docs/cost.md) and
 * water-filled by capability. Undefined unless the newcomer holds layers in such a copy.
 */
function buildCopies(plan: SwarmPlan, profiles: readonly NodeProfile[], nodes: NodeStates, model: ModelSpec, newcomer: string): Stage[][] | undefined {
  const free = freeMemory(plan, profiles);
  const used = nodesOfModel(plan, model.id);
  // Several models: only nodes that serve no copy, as the planner's disjoint copies (docs/cost.md).
  const busy = busyNodes(plan, model);
  const candidates = profiles
    .filter((p) => !used.has(p.id) && !busy.has(p.id) && (p.id === newcomer || ownValue(nodes, p.id)?.alive === true))
    .map((p) => ({ id: p.id, score: p.score ?? 1, cap: capOf(free, p.id, model) }))
    .filter((c) => c.cap > 0)
    .sort(byCapability);
  if (candidates.reduce((s, c) => s + Math.min(c.cap, model.layers), 0) < model.layers) return undefined;
  const copies = shortCopies(candidates, model.layers, Number.POSITIVE_INFINITY, model.stageFactor).map((g) => splitLayers([...g].sort(byCapability), model.layers));
  const mine = copies.find((stages) => stages.some((s) => s.nodeId === newcomer));
  // Only the newcomer's copy: the idle nodes of other groups stay spares for splices and relocation.
  return mine === undefined ? undefined : [mine];
}

/**
 * Whether a copy of `stages` has more than `factor` times the stages its own memory forces, each
 * node's room being the layers it holds there plus its free memory (the newcomer's: all of it);
 * on several models each node's full memory (docs/cost.md "A stage bound").
 */
function overBound(stages: readonly Stage[], free: Map<string, number>, newcomer: string, model: ModelSpec, factor: number, full?: ReadonlyMap<string, number>): boolean {
  const room = stages.map((s) => ({ id: s.nodeId, score: 1, cap: full !== undefined ? fullCapacity(full.get(s.nodeId) ?? 0, model) : (s.nodeId === newcomer ? 0 : s.layerEnd - s.layerStart) + capOf(free, s.nodeId, model) }));
  return stages.length > factor * memoryStagesOf(room, model.layers);
}

/**
 * Decides a newcomer's role, in this order: restore a model short of intact copies (by taking
 * the dead stages of a broken copy, or by building a dropped copy); else add a copy of the model
 * where the plan's counted-once throughput gains most (`copy` for the base model, `expert`
 * otherwise; the base model, then the experts by fewest copies, keep ties within a hop's worth);
 * else wait as a spare. On several models the copy is built from nodes that serve no copy
 * (docs/cost.md "Growth and retirement, counted once").
 *
 * @param profiles every member's profile, the newcomer's included
 * @param wanted each model's planned number of copies
 * @throws {PlanError} for a bad plan or profiles; {@link SwarmError} `InvalidInput` for other bad arguments.
 */
export function planGrowth(
  plan: SwarmPlan,
  profiles: readonly NodeProfile[],
  nodes: NodeStates,
  newcomer: NodeProfile,
  wanted: ReadonlyMap<string, number>,
  ids: IdSource,
): GrowthDecision {
  checkArgs('planGrowth', plan, profiles, nodes);
  if (profileIssues([newcomer]).length > 0) throw new PlanError('InvalidInput', `planGrowth: the newcomer must be a valid NodeProfile, got ${describeValue(newcomer)}`);
  if (!(wanted instanceof Map)) throw new SwarmError('InvalidInput', `planGrowth: "wanted" must be a Map of copies by model id, got ${describeValue(wanted)}`);
  if (typeof ids !== 'function') throw new SwarmError('InvalidInput', `planGrowth: "ids" must be an id source (a function), got ${describeValue(ids)}`);
  const index = planIndex(plan);
  const free = freeMemory(plan, profiles);
  const newId = (modelId: string) => `${modelId}/${ids()}`;

  for (const model of plan.models) {
    const pipelines = index.pipelinesByModel.get(model.id) ?? [];
    const intact = pipelines.filter((p) => isIntact(p, nodes)).length;
    if (intact >= (wanted.get(model.id) ?? 1)) continue;
    // Restore a broken copy: the newcomer takes the dead stages when they are one contiguous block.
    for (const p of pipelines) {
      const deadIdx = p.stages.flatMap((s, i) => (ownValue(nodes, s.nodeId)?.alive === true ? [] : [i]));
      const first = deadIdx[0];
      const last = deadIdx[deadIdx.length - 1];
      if (first === undefined || last === undefined || last - first + 1 !== deadIdx.length) continue;
      const lostLayers = deadIdx.reduce((sum, i) => sum + ((p.stages[i]?.layerEnd ?? 0) - (p.stages[i]?.layerStart ?? 0)), 0);
      if (capOf(free, newcomer.id, model) < lostLayers) continue;
      const stages = mergeAdjacent(p.stages.map((s) => (ownValue(nodes, s.nodeId)?.alive === true ? s : { ...s, nodeId: newcomer.id })));
      // A stage bound holds for a restored copy too: when the newcomer alone could take more of it, a copy of its own does better.
      if (model.stageFactor !== undefined && overBound(stages, free, newcomer.id, model, model.stageFactor, plan.models.length > 1 ? new Map(profiles.map((q) => [q.id, q.memoryGb] as const)) : undefined)) continue;
      const rebuilt: Pipeline = { id: newId(model.id), modelId: model.id, stages };
      return {
        plan: { models: plan.models, pipelines: plan.pipelines.map((q) => (q === p ? rebuilt : q)) },
        role: 'restore',
        modelId: model.id,
        pipelines: [rebuilt.id],
        replaced: [p.id],
        layersMoved: lostLayers,
      };
    }
    // Rebuild a dropped copy.
    if (pipelines.length < (wanted.get(model.id) ?? 1)) {
      const copies = buildCopies(plan, profiles, nodes, model, newcomer.id);
      if (copies !== undefined) return added(plan, model.id, copies, newId, 'restore');
    }
  }
  // A copy of its own for the model where counted-once throughput gains most (the base model, then
  // the experts by fewest copies, on ties within a hop's worth); else a spare. Serving copies are
  // not rewritten (docs/cost.md "Growth and retirement, counted once").
  const [base, ...experts] = [...plan.models].sort((a, b) => kindRank(plan, a) - kindRank(plan, b));
  const byFewestCopies = experts.sort((a, b) => (index.pipelinesByModel.get(a.id)?.length ?? 0) - (index.pipelinesByModel.get(b.id)?.length ?? 0));
  const all = [...profiles.filter((p) => p.id !== newcomer.id), newcomer];
  const before = layerRate(plan, all);
  let best: { model: ModelSpec; copies: Stage[][]; gain: number } | undefined;
  for (const model of base === undefined ? byFewestCopies : [base, ...byFewestCopies]) {
    // The plan's limit on copies of one model holds as it grows (docs/inputs.md, "Limits"): past it, a spare.
    if ((index.pipelinesByModel.get(model.id)?.length ?? 0) >= PLAN_LIMITS.pipelines) continue;
    const copies = buildCopies(plan, profiles, nodes, model, newcomer.id);
    if (copies === undefined) continue;
    const gain = layerRate(added(plan, model.id, copies, (id) => `${id}/?`, 'copy').plan, all) - before;
    if (best === undefined || gain > best.gain * (1 + HOP_SHARE)) best = { model, copies, gain };
  }
  if (best !== undefined) return added(plan, best.model.id, best.copies, newId, best.model === base ? 'copy' : 'expert');
  return { plan, role: 'spare', pipelines: [], replaced: [], layersMoved: 0 };
}

function kindRank(plan: SwarmPlan, model: ModelSpec): number {
  const i = plan.models.indexOf(model);
  return (model.kind ?? (i === 0 ? 'base' : 'expert')) === 'base' ? -1 : i;
}

function added(plan: SwarmPlan, modelId: string, copies: readonly Stage[][], newId: (modelId: string) => string, role: GrowthRole): GrowthDecision {
  const pipelines: Pipeline[] = copies.map((stages) => ({ id: newId(modelId), modelId, stages }));
  const layersMoved = copies.reduce((sum, stages) => sum + stages.reduce((n, s) => n + s.layerEnd - s.layerStart, 0), 0);
  return { plan: { models: plan.models, pipelines: [...plan.pipelines, ...pipelines] }, role, modelId, pipelines: pipelines.map((p) => p.id), replaced: [], layersMoved };
}

/**
 * Retires `nodeId`: every stage it holds moves to live nodes with room — one node that can take
 * the whole range, or the neighbouring stages stretched with idle nodes filling the middle,
 * whichever leaves the plan's counted-once throughput highest (docs/cost.md). A copy that cannot
 * be rebuilt is dropped whole and reported, never left half-built; `layersMoved` counts the
 * layers relocated (at most the layers the node held).
 *
 * @param profiles the members' profiles, the retiring node's included
 * @throws {PlanError} for a bad plan or profiles; {@link SwarmError} `InvalidInput` for other bad arguments.
 */
export function planRetirement(plan: SwarmPlan, profiles: readonly NodeProfile[], nodes: NodeStates, nodeId: string): RetirementDecision {
  checkArgs('planRetirement', plan, profiles, nodes);
  if (typeof nodeId !== 'string') throw new SwarmError('InvalidInput', `planRetirement: the node id must be a string, got ${describeValue(nodeId)}`);
  const remaining = profiles.filter((p) => p.id !== nodeId);
  const free = freeMemory(plan, profiles);
  const models = planIndex(plan).models;
  const relocated: Relocation[] = [];
  const dropped: string[] = [];
  const pipelines: Pipeline[] = [];
  let current: SwarmPlan = plan;
  for (const p of plan.pipelines) {
    const at = p.stages.findIndex((s) => s.nodeId === nodeId);
    if (at === -1) {
      pipelines.push(p);
      continue;
    }
    const model = models.get(p.modelId) as ModelSpec;
    const stage = p.stages[at] as Stage;
    const moves = relocateStage(current, remaining, nodes, free, model, p, at);
    if (moves === undefined) {
      dropped.push(p.id);
      for (const s of p.stages) free.set(s.nodeId, (free.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * layerFootprint(model));
      current = { models: plan.models, pipelines: current.pipelines.filter((q) => q.id !== p.id) };
      continue;
    }
    for (const m of moves) {
      free.set(m.nodeId, (free.get(m.nodeId) ?? 0) - (m.layerEnd - m.layerStart) * layerFootprint(model));
      relocated.push({ pipelineId: p.id, layerStart: m.layerStart, layerEnd: m.layerEnd, from: stage.nodeId, to: m.nodeId });
    }
    const stages = mergeAdjacent([...p.stages.slice(0, at), ...moves, ...p.stages.slice(at + 1)]);
    const rebuilt: Pipeline = { id: p.id, modelId: p.modelId, stages };
    pipelines.push(rebuilt);
    current = { models: plan.models, pipelines: current.pipelines.map((q) => (q.id === p.id ? rebuilt : q)) };
  }
  return { plan: { models: plan.models, pipelines }, relocated, dropped, layersMoved: relocated.reduce((n, r) => n + r.layerEnd - r.layerStart, 0) };
}

/** New stages covering the retiring stage `at` of `p`, or undefined if live memory cannot. */
function relocateStage(
  plan: SwarmPlan,
  profiles: readonly NodeProfile[],
  nodes: NodeStates,
  free: Map<string, number>,
  model: ModelSpec,
  p: Pipeline,
  at: number,
): Stage[] | undefined {
  const stage = p.stages[at] as Stage;
  const { layerStart: a, layerEnd: b } = stage;
  const used = nodesOfModel(plan, model.id);
  const outside = profiles
    .filter((q) => !used.has(q.id) && ownValue(nodes, q.id)?.alive === true)
    .map((q) => ({ id: q.id, score: q.score ?? 1, cap: capOf(free, q.id, model) }))
    .filter((c) => c.cap > 0)
    .sort(byCapability);
  // Every node that can take the whole range (the fastest few), and the stretch below: the one
  // where the plan's counted-once throughput loses least (growth-choice.ts).
  const wholes = outside.filter((c) => c.cap >= b - a).slice(0, WHOLE_CANDIDATES).map((c): Stage[] => [{ nodeId: c.id, layerStart: a, layerEnd: b }]);
  const stretch = stretchStage(nodes, free, model, p, at, outside);
  const options = stretch === undefined ? wholes : [...wholes, stretch];
  if (options.length <= 1) return options[0];
  return leastLoss(plan, profiles, p, at, options, mergeAdjacent);
}

/** Nodes that could take a whole retiring range, priced against each other (the fastest first). */
const WHOLE_CANDIDATES = 8;

/** The neighbouring stages stretched over the range, idle nodes filling the middle; undefined if they cannot. */
function stretchStage(nodes: NodeStates, free: Map<string, number>, model: ModelSpec, p: Pipeline, at: number, outside: readonly { id: string; cap: number }[]): Stage[] | undefined {
  const { layerStart: a, layerEnd: b } = p.stages[at] as Stage;

  const prev = p.stages[at - 1];
  const next = p.stages[at + 1];
  const room = (s: Stage | undefined) => (s !== undefined && ownValue(nodes, s.nodeId)?.alive === true ? capOf(free, s.nodeId, model) : 0);
  const takePrev = Math.min(room(prev), b - a);
  const takeNext = Math.min(room(next), b - a - takePrev);
  const moves: Stage[] = [];
  if (prev !== undefined && takePrev > 0) moves.push({ nodeId: prev.nodeId, layerStart: a, layerEnd: a + takePrev });
  let cursor = a + takePrev;
  const middleEnd = b - takeNext;
  for (const c of outside) {
    if (cursor >= middleEnd) break;
    const take = Math.min(c.cap, middleEnd - cursor);
    moves.push({ nodeId: c.id, layerStart: cursor, layerEnd: cursor + take });
    cursor += take;
  }
  if (cursor < middleEnd) return undefined;
  if (next !== undefined && takeNext > 0) moves.push({ nodeId: next.nodeId, layerStart: middleEnd, layerEnd: b });
  return moves;
}
