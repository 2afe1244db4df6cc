import { checkRequest } from './arguments.js';
import { describeValue } from './describe.js';
import { RoutingError } from './errors.js';
import { promptTokens } from './prompt.js';
import { ownValue } from './records.js';
import type { CostModel, CostPenalties, CostWeights, NodeTelemetry, NodeStates, RoutingRequest, Stage } from './types.js';

/** The original design's weights: every term counts once. */
export const DEFAULT_WEIGHTS: CostWeights = Object.freeze({ latency: 1, load: 1, capability: 1, hops: 1, tokens: 1 });

/** What an unmeasured node counts as (docs/design.md §4 [decision]). */
export const DEFAULT_PENALTIES: CostPenalties = Object.freeze({ latencyMs: 100, load: 1, score: 1 });

/** The default cost model: a node's capability term scales with its share of the model's layers. */
export const DEFAULT_COST_MODEL: CostModel = 'layer-aware';

/** A request with every default filled in and every number checked. */
export interface ResolvedRequest {
  readonly tokens: number;
  readonly weights: CostWeights;
  readonly penalties: CostPenalties;
  /** Which capability term the cost uses (docs/cost.md). */
  readonly costModel: CostModel;
  /** True when weights and penalties are the defaults (the per-model index applies). */
  readonly isDefault: boolean;
}

function checkNumber(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RoutingError('InvalidRequest', `request field "${field}" must be a finite number >= 0, got ${describeValue(value)}`);
  }
  return value;
}

function checkObject(value: unknown, field: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RoutingError('InvalidRequest', `${field} must be an object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  }
}

/**
 * Fills the defaults of a request and rejects NaN, infinite or negative numbers, an unknown key
 * (`checkRequest`), and a request, `weights` or `penalties` that is not an object (a JS caller's
 * mistake must not become a TypeError).
 * @throws {RoutingError} `InvalidRequest` naming the field.
 */
export function resolveRequest(request: RoutingRequest = {}): ResolvedRequest {
  checkRequest(request);
  if (request.weights !== undefined) checkObject(request.weights, 'request field "weights"');
  if (request.penalties !== undefined) checkObject(request.penalties, 'request field "penalties"');
  const costModel = request.costModel ?? DEFAULT_COST_MODEL;
  if (costModel !== 'layer-aware' && costModel !== 'original') {
    throw new RoutingError('InvalidRequest', `request field "costModel" must be 'layer-aware' or 'original', got ${describeValue(costModel)}`);
  }
  // A prompt sets the default (docs/prefix-cache.md); the original cost model reads the request as if it had none.
  const prompt = request.prompt;
  const tokens = request.tokens !== undefined ? checkNumber(request.tokens, 'tokens') : prompt !== undefined && costModel !== 'original' ? promptTokens(prompt) : 0;
  let isDefault = costModel === DEFAULT_COST_MODEL;
  let weights = DEFAULT_WEIGHTS;
  if (request.weights !== undefined) {
    const w: { -readonly [K in keyof CostWeights]: number } = { ...DEFAULT_WEIGHTS };
    for (const key of Object.keys(DEFAULT_WEIGHTS) as (keyof CostWeights)[]) {
      const value = request.weights[key];
      if (value !== undefined) w[key] = checkNumber(value, `weights.${key}`);
      if (w[key] !== DEFAULT_WEIGHTS[key]) isDefault = false;
    }
    weights = w;
  }
  let penalties = DEFAULT_PENALTIES;
  if (request.penalties !== undefined) {
    const p: { -readonly [K in keyof CostPenalties]: number } = { ...DEFAULT_PENALTIES };
    for (const key of Object.keys(DEFAULT_PENALTIES) as (keyof CostPenalties)[]) {
      const value = request.penalties[key];
      if (value !== undefined) p[key] = checkNumber(value, `penalties.${key}`);
      if (p[key] !== DEFAULT_PENALTIES[key]) isDefault = false;
    }
    penalties = p;
  }
  return { tokens, weights, penalties, costModel, isDefault };
}

/**
 * The cost of one stage's node: `w_l·latency + w_c·load·120 + w_k·100·share/max(score, 0.01)`.
 * `share` is the part of the model the stage runs (its layers / the model's layers) under the
 * layer-aware cost model, 1 under the original one (the original design's `100/score` per node).
 * Unknown values count as the penalties, so an unmeasured node is never the cheapest by accident;
 * an unknown load counts as `penalties.load × share`, so a cold copy is assumed as busy as one
 * loaded node whatever its number of stages (docs/cost.md). A measured load counts whole.
 * `extraLoad` is added to the load (in-flight reservations).
 */
export function nodeCost(
  telemetry: NodeTelemetry | undefined,
  weights: CostWeights = DEFAULT_WEIGHTS,
  penalties: CostPenalties = DEFAULT_PENALTIES,
  extraLoad = 0,
  share = 1,
): number {
  const latency = telemetry?.latencyMs ?? penalties.latencyMs;
  const load = (telemetry?.load ?? penalties.load * share) + extraLoad;
  const score = telemetry?.score ?? penalties.score;
  return weights.latency * latency + weights.load * load * 120 + (weights.capability * 100 * share) / Math.max(score, 0.01);
}

/**
 * The share of a model of `modelLayers` layers that a stage runs under the request's cost
 * model: `(layerEnd − layerStart) / modelLayers` (layer-aware), or 1 (original).
 */
export function stageShare(stage: Stage, modelLayers: number, costModel: CostModel): number {
  return costModel === 'original' ? 1 : (stage.layerEnd - stage.layerStart) / modelLayers;
}

/** The model's layer count as a full chain shows it: its last stage's end (a degraded route passes the count). */
function chainLayers(stages: readonly Stage[]): number {
  let end = 0;
  for (const s of stages) if (s.layerEnd > end) end = s.layerEnd;
  return Math.max(end, 1);
}

/** A node's telemetry in a table: only an own property counts (docs/inputs.md). */
export function telemetryOf(nodes: NodeStates, nodeId: string): NodeTelemetry | undefined {
  return ownValue(nodes, nodeId);
}

/**
 * Extra load per node on top of its measured EWMA (in-flight reservations); absent means 0. Only
 * own properties count: an inherited member (`toString`) is never a node's load.
 */
export type ExtraLoad = Readonly<Record<string, number>>;

/** The extra load of one node: 0 when absent or not a number. */
export function extraLoadOf(extra: ExtraLoad | undefined, nodeId: string): number {
  const v = ownValue(extra, nodeId);
  return typeof v === 'number' ? v : 0;
}

/** The hops term: `w_h · 15 · (stages − 1)`. */
export function hopsCost(stageCount: number, weights: CostWeights = DEFAULT_WEIGHTS): number {
  return weights.hops * 15 * Math.max(stageCount - 1, 0);
}

/** The tokens term: `w_p · 10 · tokens / 1024`, the same for every pipeline of a request. */
export function tokensCost(tokens: number, weights: CostWeights = DEFAULT_WEIGHTS): number {
  return (weights.tokens * 10 * tokens) / 1024;
}

/**
 * The part of a pipeline's cost that decides the choice: its stages' costs summed in stage order,
 * plus hops. The tokens term is added after, since it is equal for every pipeline of a request;
 * the per-model index relies on this order to choose bit-identically to a scan.
 * `modelLayers` is the model's layer count (default: the chain's last layer end, right for any
 * route that covers the model; a degraded route must pass it).
 */
export function chainCost(
  stages: readonly Stage[],
  nodes: NodeStates,
  r: ResolvedRequest,
  extra?: ExtraLoad,
  modelLayers: number = chainLayers(stages),
): number {
  let sum = 0;
  for (const stage of stages) {
    sum += nodeCost(telemetryOf(nodes, stage.nodeId), r.weights, r.penalties, extraLoadOf(extra, stage.nodeId), stageShare(stage, modelLayers, r.costModel));
  }
  return sum + hopsCost(stages.length, r.weights);
}

/**
 * The cost of a chain of stages (docs/cost.md):
 * `Σ cost(n) + w_h·15·hops + w_p·10·tokens/1024`, each node's capability term scaled by the
 * share of the model its stage runs unless the request asks for `costModel: 'original'`.
 * @param modelLayers the model's layer count; default the chain's last layer end
 * @example pipelineCost(pipeline.stages, state.nodes, { tokens: 512 })
 */
export function pipelineCost(
  stages: readonly Stage[],
  nodes: NodeStates,
  request: RoutingRequest | ResolvedRequest = {},
  modelLayers?: number,
): number {
  const r = 'isDefault' in request ? request : resolveRequest(request);
  return chainCost(stages, nodes, r, undefined, modelLayers) + tokensCost(r.tokens, r.weights);
}
