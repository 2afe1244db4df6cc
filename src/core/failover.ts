import { extraLoadOf, nodeCost, resolveRequest, type ExtraLoad, type ResolvedRequest } from './cost.js';
import { describeValue, isRecordLike } from './describe.js';
import { RoutingError } from './errors.js';
import { ownValue } from './records.js';
import { deadNodesOf, planIndex } from './plan-index.js';
import { checkStateLike, cheapestIntact, makeRoute, requireModel } from './route.js';
import type { LayerRange, NodeStates, Pipeline, Recovery, Replacement, Route, RoutingRequest, Stage, SwarmStateLike } from './types.js';

/** How far a failover may go. */
export interface FailoverOptions {
  /** Serve the survivors of the lost route with layers missing rather than throw. @defaultValue false */
  readonly allowDegraded?: boolean;
  /** The reserve model a degraded route reports; else the model spec's `fallback`. */
  readonly fallbackModel?: string;
  /** The request whose cost the recovered route reports. @defaultValue `{}` */
  readonly request?: RoutingRequest;
}

/**
 * Recovers `route` after `failedNodeId` failed (docs/design.md §6), in this order and no other:
 * an intact copy of the same model → a per-layer splice over live nodes of other copies →
 * the degraded survivors (only if allowed) → `RoutingError` `Unrecoverable`. The failed node
 * counts as dead even if `state` has not marked it yet. A route that does not use the failed
 * node comes back as it is (`strategy: 'unaffected'`).
 *
 * The route may itself be a recovery: a splice keeps its pipeline's id, and a degraded route
 * (whose `modelId` is the fallback) is recovered as its pipeline's model, every layer it
 * misses counting as lost, so a copy or splice of it is whole again and never a half route.
 *
 * `extra` is in-flight load per node on top of the telemetry (the runtime's reservations).
 *
 * @example
 * const recovery = failoverInSwarm(route, 'gpu', state, { allowDegraded: true });
 */
export function failoverInSwarm(
  route: Route,
  failedNodeId: string,
  state: SwarmStateLike,
  options: FailoverOptions = {},
  extra?: ExtraLoad,
): Recovery {
  if (!isRoute(route)) {
    throw new RoutingError('InvalidRequest', 'failover needs the lost route: an object { modelId, pipelineId, stages, ... } as routeRequest returns');
  }
  if (typeof failedNodeId !== 'string') throw new RoutingError('InvalidRequest', `the failed node id must be a string, got ${describeValue(failedNodeId)}`);
  if (options === null || typeof options !== 'object') throw new RoutingError('InvalidRequest', 'failover options must be an object { allowDegraded?, fallbackModel?, request? }');
  checkExtraLoad(extra);
  checkStateLike(state, 'failoverInSwarm');
  const r = resolveRequest(options.request);
  const source = sourcePipeline(route, state);
  const model = requireModel(source?.modelId ?? route.modelId, state);
  if (options.fallbackModel !== undefined) requireModel(options.fallbackModel, state);
  if (!route.stages.some((s) => s.nodeId === failedNodeId)) {
    return { modelId: model.id, strategy: 'unaffected', degraded: route.degraded, route, from: route, replaced: [], missingLayers: [] };
  }
  const nodes = state.nodes;
  const isDead = (id: string) => id === failedNodeId || ownValue(nodes, id)?.alive !== true;
  const pipelines = planIndex(state.plan).pipelinesByModel.get(model.id) ?? [];

  const L = model.layers;
  const copy = cheapestIntact(pipelines, nodes, r, failedNodeId, extra, L);
  if (copy !== undefined) {
    return { modelId: model.id, strategy: 'copy', degraded: false, route: makeRoute(model.id, copy.pipeline.id, copy.pipeline.stages, nodes, r, false, extra, L), from: route, replaced: [], missingLayers: [] };
  }

  const lost = lostRanges(route.stages, L, source, isDead, failedNodeId);
  const splice = spliceRoute(route, lost, pipelines, nodes, r, isDead, L, extra);
  if (splice !== undefined) {
    return { modelId: model.id, strategy: 'splice', degraded: false, route: makeRoute(model.id, route.pipelineId, splice.stages, nodes, r, false, extra, L), from: route, replaced: splice.replaced, missingLayers: [] };
  }

  const survivors = route.stages.filter((s) => !isDead(s.nodeId));
  if (options.allowDegraded === true && survivors.length > 0) {
    const reserve = options.fallbackModel ?? model.fallback ?? model.id;
    const missingLayers = mergeRanges(lost.map((l) => l.range));
    return { modelId: model.id, strategy: 'degraded', degraded: true, route: makeRoute(reserve, route.pipelineId, survivors, nodes, r, true, extra, L), from: route, replaced: [], missingLayers };
  }

  const others = pipelines.filter((p) => p.id !== route.pipelineId).map((p) => `${p.id}: ${deadNodesOf(p, nodes, failedNodeId).join(', ')} down`);
  const unheld = unheldRanges(lost, pipelines, isDead).map((l) => `[${l.layerStart}, ${l.layerEnd})`).join(' ');
  const why = [
    others.length > 0 ? `no intact copy (${others.join('; ')})` : 'no other copy',
    `layers ${unheld} held by no live node of another copy`,
    survivors.length === 0 ? 'no survivor to degrade to' : options.allowDegraded === true ? '' : 'degradation not allowed',
  ].filter((s) => s.length > 0);
  throw new RoutingError('Unrecoverable', `cannot recover model "${model.id}" after node "${failedNodeId}" failed: ${why.join(', ')}`);
}

/** Whether `value` has the shape of a {@link Route}: string ids, stages with a string node id and integer layers. */
export function isRoute(value: unknown): value is Route {
  if (!isRecordLike(value) || typeof value.modelId !== 'string' || typeof value.pipelineId !== 'string' || !Array.isArray(value.stages)) return false;
  return Array.from(value.stages as unknown[]).every(
    (s) => isRecordLike(s) && typeof s.nodeId === 'string' && Number.isSafeInteger(s.layerStart) && Number.isSafeInteger(s.layerEnd) && (s.layerStart as number) < (s.layerEnd as number),
  );
}

/**
 * Checks in-flight load handed in by a caller: absent, or an object of numbers by node id.
 * @throws {RoutingError} `InvalidRequest`.
 */
export function checkExtraLoad(extra: unknown): asserts extra is ExtraLoad | undefined {
  if (extra === undefined || isRecordLike(extra)) return;
  throw new RoutingError('InvalidRequest', `in-flight load must be an object of numbers by node id, got ${describeValue(extra)}`);
}

/**
 * The planned pipeline a route was taken from. A degraded route reports the fallback model as
 * its `modelId`, so its own model is found through `pipelineId`; other routes keep their model.
 */
function sourcePipeline(route: Route, state: SwarmStateLike): Pipeline | undefined {
  const pipeline = state.plan.pipelines.find((p) => p.id === route.pipelineId);
  if (pipeline === undefined) return undefined;
  return route.degraded || pipeline.modelId === route.modelId ? pipeline : undefined;
}

interface LostStage {
  readonly nodeId: string;
  readonly range: LayerRange;
}

/**
 * Every layer of `[0, layers)` no live stage of the route serves: the stages of dead nodes, and
 * the layers a degraded route already misses. Each lost range names the node that held it: the
 * route's dead node, else the planned pipeline's node, else the failed node.
 */
function lostRanges(
  stages: readonly Stage[],
  layers: number,
  source: Pipeline | undefined,
  isDead: (id: string) => boolean,
  failedNodeId: string,
): LostStage[] {
  const holderAt = (list: readonly Stage[], layer: number) => list.find((s) => s.layerStart <= layer && layer < s.layerEnd);
  const live = stages.filter((s) => !isDead(s.nodeId));
  const lost: { nodeId: string; range: { layerStart: number; layerEnd: number } }[] = [];
  for (let layer = 0; layer < layers; layer++) {
    if (holderAt(live, layer) !== undefined) continue;
    const nodeId = holderAt(stages, layer)?.nodeId ?? (source ? holderAt(source.stages, layer)?.nodeId : undefined) ?? failedNodeId;
    const last = lost[lost.length - 1];
    if (last !== undefined && last.nodeId === nodeId && last.range.layerEnd === layer) last.range.layerEnd = layer + 1;
    else lost.push({ nodeId, range: { layerStart: layer, layerEnd: layer + 1 } });
  }
  return lost;
}

/** The lost layers no live node of the model holds, merged: what makes a splice impossible. */
function unheldRanges(lost: readonly LostStage[], pipelines: readonly Pipeline[], isDead: (id: string) => boolean): LayerRange[] {
  const held: LayerRange[] = [];
  for (const p of pipelines) for (const s of p.stages) if (!isDead(s.nodeId)) held.push(s);
  const out: LayerRange[] = [];
  for (const { range } of lost) {
    for (let layer = range.layerStart; layer < range.layerEnd; layer++) {
      if (!held.some((h) => h.layerStart <= layer && layer < h.layerEnd)) out.push({ layerStart: layer, layerEnd: layer + 1 });
    }
  }
  return mergeRanges(out);
}

/** Merges touching or overlapping ranges, sorted. */
export function mergeRanges(ranges: readonly LayerRange[]): LayerRange[] {
  const sorted = [...ranges].sort((a, b) => a.layerStart - b.layerStart);
  const out: { layerStart: number; layerEnd: number }[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r.layerStart <= last.layerEnd) last.layerEnd = Math.max(last.layerEnd, r.layerEnd);
    else out.push({ layerStart: r.layerStart, layerEnd: r.layerEnd });
  }
  return out;
}

/**
 * Covers every lost range with live nodes that hold those layers in some pipeline of the model,
 * as a shortest path over layer boundaries: an edge from boundary x runs to the furthest layer a
 * live holder of x reaches, weighted by that node's cost for those layers (the same cost model
 * as routing) plus one hop. Returns undefined if any
 * lost layer has no live holder.
 */
function spliceRoute(
  route: Route,
  lost: readonly LostStage[],
  pipelines: readonly Pipeline[],
  nodes: NodeStates,
  r: ResolvedRequest,
  isDead: (id: string) => boolean,
  modelLayers: number,
  extra?: ExtraLoad,
): { stages: Stage[]; replaced: Replacement[] } | undefined {
  const holders: Stage[] = [];
  for (const p of pipelines) for (const s of p.stages) if (!isDead(s.nodeId)) holders.push(s);
  const covers: Stage[] = [];
  for (const range of mergeRanges(lost.map((l) => l.range))) {
    const segment = cheapestCover(holders, range, nodes, r, modelLayers, extra);
    if (segment === undefined) return undefined;
    covers.push(...segment);
  }
  const replaced: Replacement[] = [];
  for (const c of covers) {
    for (const l of lost) {
      const start = Math.max(c.layerStart, l.range.layerStart);
      const end = Math.min(c.layerEnd, l.range.layerEnd);
      if (start < end) replaced.push({ layerStart: start, layerEnd: end, from: l.nodeId, to: c.nodeId });
    }
  }
  const survivors = route.stages.filter((s) => !isDead(s.nodeId));
  const stages = mergeAdjacent([...survivors, ...covers].sort((x, y) => x.layerStart - y.layerStart));
  return { stages, replaced };
}

/**
 * The cheapest cover of `range` by `holders` (live stages of any copy), as a shortest path over
 * layer boundaries: from boundary x an edge runs to the furthest layer a holder of x reaches,
 * weighted by that node's cost for those layers (the routing cost model, layer share included)
 * plus one hop. Undefined if some layer of the range has no holder. Shared by failover's splice
 * and a session's resume, so both price a splice alike.
 */
export function cheapestCover(
  holders: readonly Stage[],
  range: LayerRange,
  nodes: NodeStates,
  r: ResolvedRequest,
  modelLayers: number,
  extra?: ExtraLoad,
): Stage[] | undefined {
  const { layerStart: a, layerEnd: b } = range;
  const hop = r.weights.hops * 15;
  const dist = new Array<number>(b - a + 1).fill(Infinity);
  const prev = new Array<{ from: number; nodeId: string } | undefined>(b - a + 1).fill(undefined);
  dist[0] = 0;
  for (let x = a; x < b; x++) {
    const dx = dist[x - a] ?? Infinity;
    if (dx === Infinity) continue;
    for (const h of holders) {
      if (h.layerStart > x || h.layerEnd <= x) continue;
      const y = Math.min(h.layerEnd, b);
      const share = r.costModel === 'original' ? 1 : (y - x) / modelLayers;
      const d = dx + nodeCost(ownValue(nodes, h.nodeId), r.weights, r.penalties, extraLoadOf(extra, h.nodeId), share) + hop;
      if (d < (dist[y - a] ?? Infinity)) {
        dist[y - a] = d;
        prev[y - a] = { from: x, nodeId: h.nodeId };
      }
    }
  }
  if ((dist[b - a] ?? Infinity) === Infinity) return undefined;
  const out: Stage[] = [];
  for (let y = b; y > a; ) {
    const step = prev[y - a];
    if (step === undefined) return undefined;
    out.unshift({ nodeId: step.nodeId, layerStart: step.from, layerEnd: y });
    y = step.from;
  }
  return out;
}

/** Joins consecutive stages held by the same node: one node, one hop. */
export function mergeAdjacent(stages: readonly Stage[]): Stage[] {
  const out: Stage[] = [];
  for (const s of stages) {
    const last = out[out.length - 1];
    if (last !== undefined && last.nodeId === s.nodeId && last.layerEnd === s.layerStart) out[out.length - 1] = { ...last, layerEnd: s.layerEnd };
    else out.push({ ...s });
  }
  return out;
}
