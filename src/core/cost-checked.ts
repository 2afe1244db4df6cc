/**
 * The cost functions as the package exports them: the same numbers as `cost.ts`, with every
 * argument checked first, so a JavaScript caller's mistake is a `RoutingError` `InvalidRequest`
 * naming the argument, never a `TypeError` or a NaN cost. Routing itself calls the unchecked
 * functions of `cost.ts` on data it has already checked.
 */
import * as cost from './cost.js';
import { describeValue, isRecordLike } from './describe.js';
import { RoutingError } from './errors.js';
import type { CostModel, CostPenalties, CostWeights, NodeStates, NodeTelemetry, RoutingRequest, Stage } from './types.js';

const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

function invalid(what: string, value: unknown): RoutingError {
  return new RoutingError('InvalidRequest', `${what}, got ${describeValue(value)}`);
}

/** Whether `r` is a request as {@link cost.resolveRequest} returns it: finite numbers >= 0 throughout. */
export function isResolvedRequest(r: unknown): r is cost.ResolvedRequest {
  if (!isRecordLike(r) || !isCount(r.tokens) || typeof r.isDefault !== 'boolean' || !isCostModel(r.costModel)) return false;
  const w = r.weights;
  const p = r.penalties;
  return (
    isRecordLike(w) && isCount(w.latency) && isCount(w.load) && isCount(w.capability) && isCount(w.hops) && isCount(w.tokens) &&
    isRecordLike(p) && isCount(p.latencyMs) && isCount(p.load) && isCount(p.score)
  );
}

const isCostModel = (v: unknown): v is CostModel => v === 'layer-aware' || v === 'original';

function checkTelemetry(t: unknown): NodeTelemetry | undefined {
  if (t === undefined) return undefined;
  if (!isRecordLike(t)) throw invalid('telemetry must be an object { alive, latencyMs?, load?, score?, samples } or undefined', t);
  for (const field of ['latencyMs', 'load', 'score'] as const) {
    if (t[field] !== undefined && !isCount(t[field])) throw invalid(`telemetry field "${field}" must be a finite number >= 0`, t[field]);
  }
  return t as unknown as NodeTelemetry;
}

/** A stage as the cost reads it: a string node id and layers `0 <= layerStart <= layerEnd`, finite. */
function isStage(s: unknown): s is Stage {
  return isRecordLike(s) && typeof s.nodeId === 'string' && isCount(s.layerStart) && isCount(s.layerEnd) && (s.layerEnd as number) >= (s.layerStart as number);
}

function checkStage(stage: unknown): Stage {
  if (!isStage(stage)) throw invalid('a stage must be { nodeId, layerStart, layerEnd } with finite layers 0 <= layerStart <= layerEnd', stage);
  return stage;
}

function checkStages(stages: unknown): readonly Stage[] {
  if (!Array.isArray(stages) || !Array.from(stages as unknown[]).every(isStage)) {
    throw invalid('stages must be an array of { nodeId, layerStart, layerEnd } with finite layers 0 <= layerStart <= layerEnd', stages);
  }
  return stages as readonly Stage[];
}

function checkModelLayers(modelLayers: unknown): number | undefined {
  if (modelLayers === undefined) return undefined;
  if (typeof modelLayers !== 'number' || !Number.isFinite(modelLayers) || modelLayers <= 0) throw invalid('the model layer count must be a finite number > 0', modelLayers);
  return modelLayers;
}

function checkNodes(nodes: unknown): NodeStates {
  if (!isRecordLike(nodes)) throw invalid('nodes must be an object of telemetry by node id', nodes);
  return nodes as unknown as NodeStates;
}

/**
 * The cost of one stage's node: `w_l·latency + w_c·load·120 + w_k·100·share/max(score, 0.01)`,
 * unknown values counting as the penalties (an unknown load as `penalties.load × share`;
 * docs/cost.md). Weights and penalties may be partial; `share` is the part of the model the
 * stage runs (1 under the original cost model).
 * @throws {RoutingError} `InvalidRequest` naming the bad argument.
 * @example nodeCost({ alive: true, samples: 3, latencyMs: 12, load: 0.5 })
 */
export function nodeCost(
  telemetry?: NodeTelemetry,
  weights: Partial<CostWeights> = cost.DEFAULT_WEIGHTS,
  penalties: Partial<CostPenalties> = cost.DEFAULT_PENALTIES,
  extraLoad = 0,
  share = 1,
): number {
  const t = checkTelemetry(telemetry);
  const r = cost.resolveRequest({ weights, penalties });
  if (!isCount(extraLoad)) throw invalid('extraLoad must be a finite number >= 0', extraLoad);
  if (!isCount(share)) throw invalid('share must be a finite number >= 0', share);
  return cost.nodeCost(t, r.weights, r.penalties, extraLoad, share);
}

/**
 * The share of a model of `modelLayers` layers that a stage runs under a cost model:
 * `(layerEnd − layerStart) / modelLayers` (layer-aware), or 1 (original).
 * @throws {RoutingError} `InvalidRequest` naming the bad argument.
 * @example stageShare({ nodeId: 'a', layerStart: 0, layerEnd: 8 }, 32, 'layer-aware') // 0.25
 */
export function stageShare(stage: Stage, modelLayers: number, costModel: CostModel): number {
  const s = checkStage(stage);
  const layers = checkModelLayers(modelLayers);
  if (layers === undefined) throw invalid('the model layer count must be a finite number > 0', modelLayers);
  if (!isCostModel(costModel)) throw invalid("the cost model must be 'layer-aware' or 'original'", costModel);
  return cost.stageShare(s, layers, costModel);
}

/**
 * The hops term: `w_h · 15 · (stages − 1)`.
 * @throws {RoutingError} `InvalidRequest` for a count that is not a finite number >= 0, or bad weights.
 */
export function hopsCost(stageCount: number, weights: Partial<CostWeights> = cost.DEFAULT_WEIGHTS): number {
  if (!isCount(stageCount)) throw invalid('the stage count must be a finite number >= 0', stageCount);
  return cost.hopsCost(stageCount, cost.resolveRequest({ weights }).weights);
}

/**
 * The tokens term: `w_p · 10 · tokens / 1024`.
 * @throws {RoutingError} `InvalidRequest` for tokens that are not a finite number >= 0, or bad weights.
 */
export function tokensCost(tokens: number, weights: Partial<CostWeights> = cost.DEFAULT_WEIGHTS): number {
  if (!isCount(tokens)) throw invalid('tokens must be a finite number >= 0', tokens);
  return cost.tokensCost(tokens, cost.resolveRequest({ weights }).weights);
}

/**
 * A chain's nodes' costs summed in stage order, plus hops (the part of a pipeline's cost that
 * decides the choice). `r` is a request as {@link cost.resolveRequest} returns it.
 * @throws {RoutingError} `InvalidRequest` naming the bad argument.
 */
export function chainCost(stages: readonly Stage[], nodes: NodeStates, r: cost.ResolvedRequest, extra?: cost.ExtraLoad, modelLayers?: number): number {
  const s = checkStages(stages);
  const n = checkNodes(nodes);
  if (!isResolvedRequest(r)) throw invalid('the request must be as resolveRequest returns it', r);
  if (extra !== undefined && !isRecordLike(extra)) throw invalid('in-flight load must be an object of numbers by node id', extra);
  const layers = checkModelLayers(modelLayers);
  for (const stage of s) checkTelemetry(cost.telemetryOf(n, stage.nodeId));
  return cost.chainCost(s, n, r, extra, layers);
}

/**
 * The cost of a chain of stages (docs/cost.md): `Σ cost(n) + w_h·15·hops + w_p·10·tokens/1024`,
 * each node's capability term scaled by the share of the model its stage runs unless the request
 * asks for `costModel: 'original'`.
 * @param modelLayers the model's layer count; default the chain's last layer end
 * @throws {RoutingError} `InvalidRequest` naming the bad argument.
 * @example pipelineCost(pipeline.stages, state.nodes, { tokens: 512 })
 */
export function pipelineCost(stages: readonly Stage[], nodes: NodeStates, request: RoutingRequest | cost.ResolvedRequest = {}, modelLayers?: number): number {
  const s = checkStages(stages);
  const n = checkNodes(nodes);
  const r = isResolvedRequest(request) ? request : cost.resolveRequest(request as RoutingRequest);
  const layers = checkModelLayers(modelLayers);
  for (const stage of s) checkTelemetry(cost.telemetryOf(n, stage.nodeId));
  return cost.pipelineCost(s, n, r, layers);
}
