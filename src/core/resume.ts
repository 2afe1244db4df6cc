import { chainCost, resolveRequest, type ExtraLoad, type ResolvedRequest } from './cost.js';
import { describeValue } from './describe.js';
import { RoutingError } from './errors.js';
import { checkExtraLoad, cheapestCover, isRoute, mergeRanges } from './failover.js';
import { planIndex } from './plan-index.js';
import { ownValue } from './records.js';
import { checkStateLike, makeRoute, requireModel } from './route.js';
import type { LayerRange, NodeStates, Pipeline, Replacement, Route, RoutingRequest, Stage, SwarmStateLike } from './types.js';

/**
 * How a session's remaining layers are re-served: the route's own live stages after the failed
 * one kept and only dead spans re-served (`keep`, the default: only the dead spans' caches are
 * lost, so only they are replayed), or a suffix of an intact copy first (`suffix`: the failover
 * order of docs/design.md §6 applied to the remaining layers; every remaining layer moves, so
 * every remaining layer is replayed).
 */
export type ResumePreference = 'keep' | 'suffix';

/** How far a resumption may go. */
export interface ResumeOptions {
  /** Serve the remaining layers with some missing rather than throw. @defaultValue false */
  readonly allowDegraded?: boolean;
  /** The reserve model a degraded route reports; else the model spec's `fallback`. */
  readonly fallbackModel?: string;
  /** The request whose cost the new route reports. @defaultValue `{}` */
  readonly request?: RoutingRequest;
  /** @defaultValue 'keep' */
  readonly prefer?: ResumePreference;
  /** Nodes that count as dead whatever the state says (nodes that already failed this session). */
  readonly dead?: readonly string[];
  /** In-flight load per node on top of the telemetry (the runtime's reservations). */
  readonly extra?: ExtraLoad;
}

/**
 * `suffix`: the remaining layers moved whole to one intact copy. `copy`: each dead span re-served
 * by a contiguous run of one live copy. `splice`: some dead span needed nodes of several copies.
 * `degraded`: some layers have no live holder and are missing.
 */
export type ResumeStrategy = 'suffix' | 'copy' | 'splice' | 'degraded';

/** The outcome of {@link resumeRoute}: a whole route whose first `resumeAt` stages are the old route's. */
export interface Resumption {
  readonly modelId: string;
  readonly strategy: ResumeStrategy;
  readonly degraded: boolean;
  /** The old route's stages before the failed one, then the cover of `[layerStart, L)`. */
  readonly route: Route;
  /** The route that failed. */
  readonly from: Route;
  /** Index, in `route.stages`, of the stage to run next: the failed stage's index. */
  readonly resumeAt: number;
  /** The failed stage's first layer: where the remaining layers start. */
  readonly layerStart: number;
  /** Every remaining layer range now served by another node (these are replayed), with who held it. */
  readonly replaced: readonly Replacement[];
  readonly missingLayers: readonly LayerRange[];
}

/**
 * Re-routes the layers a session has not run yet after stage `failedStageIndex` of `route` failed:
 * a cover of `[layerStart of the failed stage, L)` on live nodes, the stages before it untouched
 * (they already ran this step). The failed stage's node counts as dead even if the state has not
 * marked it yet. Order, and nothing else: with `prefer: 'suffix'`, a suffix of an intact copy;
 * then each dead span re-served by one live copy, else by a per-layer splice over several copies;
 * then, only if allowed, the live layers with the rest missing; else `RoutingError`
 * `Unrecoverable`. Pure: plain data in, plain data out.
 *
 * @throws {RoutingError} `Unrecoverable` naming the layers no live node holds; `InvalidRequest`
 *   for a bad route, stage index, state or option; {@link PlanError} `InvalidPlan` for a plan with a gap or an overlap.
 * @example
 * const { route, resumeAt } = resumeRoute(route, 2, swarm.state());
 */
export function resumeRoute(route: Route, failedStageIndex: number, state: SwarmStateLike, options: ResumeOptions = {}): Resumption {
  if (!isRoute(route)) {
    throw new RoutingError('InvalidRequest', 'resumeRoute needs the failed route: an object { modelId, pipelineId, stages, ... } as routeRequest returns');
  }
  const failed = Number.isInteger(failedStageIndex) ? route.stages[failedStageIndex] : undefined;
  if (failed === undefined) {
    throw new RoutingError('InvalidRequest', `failed stage index must be an integer in [0, ${route.stages.length}), got ${describeValue(failedStageIndex)}`);
  }
  if (options === null || typeof options !== 'object') throw new RoutingError('InvalidRequest', 'resume options must be an object { allowDegraded?, fallbackModel?, request?, prefer?, dead? }');
  const { prefer, dead: deadOption, extra } = options;
  if (prefer !== undefined && prefer !== 'keep' && prefer !== 'suffix') throw new RoutingError('InvalidRequest', `resume option "prefer" must be 'keep' or 'suffix', got ${describeValue(prefer)}`);
  if (deadOption !== undefined && !(Array.isArray(deadOption) && Array.from(deadOption as unknown[]).every((id) => typeof id === 'string'))) {
    throw new RoutingError('InvalidRequest', `resume option "dead" must be an array of node ids, got ${describeValue(deadOption)}`);
  }
  checkExtraLoad(extra);
  checkStateLike(state, 'resumeRoute');
  const r = resolveRequest(options.request);
  const pipeline = state.plan.pipelines.find((p) => p.id === route.pipelineId);
  const model = requireModel(route.degraded && pipeline !== undefined ? pipeline.modelId : route.modelId, state);
  if (options.fallbackModel !== undefined) requireModel(options.fallbackModel, state);
  const nodes = state.nodes;
  const dead = new Set<string>([failed.nodeId, ...(deadOption ?? [])]);
  const isDead = (id: string) => dead.has(id) || ownValue(nodes, id)?.alive !== true;
  const pipelines = planIndex(state.plan).pipelinesByModel.get(model.id) ?? [];
  const from = failed.layerStart;
  const prefix = route.stages.slice(0, failedStageIndex);
  const tail = route.stages.slice(failedStageIndex);
  const finish = (strategy: ResumeStrategy, cover: readonly Stage[], missingLayers: readonly LayerRange[] = []): Resumption => {
    const degraded = strategy === 'degraded';
    const modelId = degraded ? (options.fallbackModel ?? model.fallback ?? model.id) : model.id;
    // No merging across the resume point: stage indices before it stay the old route's.
    const stages = [...prefix, ...cover];
    return {
      modelId: model.id,
      strategy,
      degraded,
      route: makeRoute(modelId, route.pipelineId, stages, nodes, r, degraded, extra),
      from: route,
      resumeAt: failedStageIndex,
      layerStart: from,
      replaced: replacements(tail, cover, from, model.layers, failed.nodeId),
      missingLayers,
    };
  };

  if (prefer === 'suffix') {
    const suffix = cheapestSuffix(pipelines, from, model.layers, nodes, r, isDead, extra);
    if (suffix !== undefined) return finish('suffix', suffix);
  }

  const kept = tail.filter((s) => !isDead(s.nodeId));
  const lost = uncovered(kept, from, model.layers);
  const cover: Stage[] = [...kept];
  const unheld: LayerRange[] = [];
  let spliced = false;
  for (const whole of lost) {
    // A range some layer of which no live node holds is served in its held pieces (for a degraded route).
    for (const { range, held } of heldRuns(whole, pipelines, isDead)) {
      if (!held) {
        unheld.push(range);
        continue;
      }
      const one = cheapestSegment(pipelines, range, nodes, r, isDead, extra);
      if (one !== undefined) {
        cover.push(...one);
        continue;
      }
      cover.push(...(spliceCover(pipelines, range, nodes, r, isDead, model.layers, extra) ?? []));
      spliced = true;
    }
  }
  cover.sort((a, b) => a.layerStart - b.layerStart);
  if (unheld.length === 0) return finish(spliced ? 'splice' : 'copy', cover);
  if (options.allowDegraded === true && prefix.length + cover.length > 0) return finish('degraded', cover, mergeRanges(unheld));
  const layers = unheld.map((l) => `[${l.layerStart}, ${l.layerEnd})`).join(' ');
  const why = options.allowDegraded === true ? 'nothing left to degrade to' : 'degradation not allowed';
  throw new RoutingError(
    'Unrecoverable',
    `cannot resume model "${model.id}" from layer ${from} after node "${failed.nodeId}" failed: layers ${layers} are held by no live node of any copy (${why})`,
  );
}

/** The ranges of `[from, to)` no stage of `kept` serves, in order. */
function uncovered(kept: readonly Stage[], from: number, to: number): LayerRange[] {
  const out: LayerRange[] = [];
  let at = from;
  for (const s of [...kept].sort((a, b) => a.layerStart - b.layerStart)) {
    if (s.layerStart > at) out.push({ layerStart: at, layerEnd: s.layerStart });
    at = Math.max(at, s.layerEnd);
  }
  if (at < to) out.push({ layerStart: at, layerEnd: to });
  return out;
}

/** `range` cut into runs of layers that some live node holds, and runs that none holds. */
function heldRuns(range: LayerRange, pipelines: readonly Pipeline[], isDead: (id: string) => boolean): { range: LayerRange; held: boolean }[] {
  const isHeld = (layer: number) => pipelines.some((p) => p.stages.some((s) => s.layerStart <= layer && layer < s.layerEnd && !isDead(s.nodeId)));
  const out: { range: { layerStart: number; layerEnd: number }; held: boolean }[] = [];
  for (let layer = range.layerStart; layer < range.layerEnd; layer++) {
    const held = isHeld(layer);
    const last = out[out.length - 1];
    if (last !== undefined && last.held === held) last.range.layerEnd = layer + 1;
    else out.push({ range: { layerStart: layer, layerEnd: layer + 1 }, held });
  }
  return out;
}

/** The stages of `pipeline` that serve `range`, trimmed to it; undefined if one is dead. */
function segmentOf(pipeline: Pipeline, range: LayerRange, isDead: (id: string) => boolean): Stage[] | undefined {
  const out: Stage[] = [];
  for (const s of pipeline.stages) {
    if (s.layerEnd <= range.layerStart || s.layerStart >= range.layerEnd) continue;
    if (isDead(s.nodeId)) return undefined;
    out.push({ nodeId: s.nodeId, layerStart: Math.max(s.layerStart, range.layerStart), layerEnd: Math.min(s.layerEnd, range.layerEnd) });
  }
  return out;
}

/** The cheapest copy (ties to the smaller id) whose stages over `range` are all live, trimmed to it. */
function cheapestSegment(
  pipelines: readonly Pipeline[],
  range: LayerRange,
  nodes: NodeStates,
  r: ResolvedRequest,
  isDead: (id: string) => boolean,
  extra?: ExtraLoad,
): Stage[] | undefined {
  let best: { stages: Stage[]; cost: number } | undefined;
  for (const p of pipelines) {
    const stages = segmentOf(p, range, isDead);
    if (stages === undefined || stages.length === 0) continue;
    const cost = chainCost(stages, nodes, r, extra);
    if (best === undefined || cost < best.cost) best = { stages, cost };
  }
  return best?.stages;
}

/** A suffix of an intact copy: the cheapest copy live over `[from, layers)`. */
function cheapestSuffix(
  pipelines: readonly Pipeline[],
  from: number,
  layers: number,
  nodes: NodeStates,
  r: ResolvedRequest,
  isDead: (id: string) => boolean,
  extra?: ExtraLoad,
): Stage[] | undefined {
  return cheapestSegment(pipelines, { layerStart: from, layerEnd: layers }, nodes, r, isDead, extra);
}

/** Covers `range` with live holders of any copy (failover's splice search: the same cost). */
function spliceCover(
  pipelines: readonly Pipeline[],
  range: LayerRange,
  nodes: NodeStates,
  r: ResolvedRequest,
  isDead: (id: string) => boolean,
  modelLayers: number,
  extra?: ExtraLoad,
): Stage[] | undefined {
  const holders: Stage[] = [];
  for (const p of pipelines) for (const s of p.stages) if (!isDead(s.nodeId)) holders.push(s);
  return cheapestCover(holders, range, nodes, r, modelLayers, extra);
}

/** Every layer range of `[from, layers)` whose holder changed: what the replacements must replay. */
function replacements(tail: readonly Stage[], cover: readonly Stage[], from: number, layers: number, failedNodeId: string): Replacement[] {
  const holder = (list: readonly Stage[], layer: number) => list.find((s) => s.layerStart <= layer && layer < s.layerEnd);
  const out: { layerStart: number; layerEnd: number; from: string; to: string }[] = [];
  for (let layer = from; layer < layers; layer++) {
    const was = holder(tail, layer);
    const now = holder(cover, layer);
    if (now === undefined) continue;
    const same = was !== undefined && was.nodeId === now.nodeId && was.layerStart === now.layerStart && was.layerEnd === now.layerEnd;
    if (same) continue;
    const fromNode = was?.nodeId ?? failedNodeId;
    const last = out[out.length - 1];
    if (last !== undefined && last.layerEnd === layer && last.from === fromNode && last.to === now.nodeId) last.layerEnd = layer + 1;
    else out.push({ layerStart: layer, layerEnd: layer + 1, from: fromNode, to: now.nodeId });
  }
  return out;
}
