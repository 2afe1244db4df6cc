/**
 * The plain-data vocabulary of hecate-swarm (docs/design.md §1). Every value here is
 * JSON-serialisable: plans, routes and recoveries print, diff and snapshot cleanly.
 */

/** One machine of the swarm. `score` is its capability (higher is faster). */
export interface NodeProfile {
  readonly id: string;
  readonly memoryGb: number;
  /** Capability; higher is faster. @defaultValue 1 */
  readonly score?: number;
  /** Latency the node declares, in milliseconds. */
  readonly latencyMs?: number;
  /**
   * Requests it serves at once, a positive integer: admission's capacity (docs/admission.md).
   * @defaultValue unlimited: the node never saturates
   */
  readonly slots?: number;
  /**
   * How fast it loads weights, in GB per second: a span of `b` GB loads in `b ÷ loadGbPerSecond`
   * seconds. The rebalancer prices moves by it (docs/rebalance.md "Cost model").
   * @defaultValue the rebalancer's `loadGbPerSecond` (1 GB/s)
   */
  readonly loadGbPerSecond?: number;
}

/** `base` is the model the swarm serves by default; experts are extra models. */
export type ModelKind = 'base' | 'expert';

/** A model to serve: `layers` layers of `layerGb` each, in `pipelines` copies. */
export interface ModelSpec {
  readonly id: string;
  readonly layers: number;
  /** Memory one layer needs, in GB. @defaultValue 1 */
  readonly layerGb?: number;
  /** Number of complete copies to plan. @defaultValue 1 */
  readonly pipelines?: number;
  /** @defaultValue 'base' for the first model listed, 'expert' for the others */
  readonly kind?: ModelKind;
  /** The reserve model a degraded route reports (docs/design.md §6.3). */
  readonly fallback?: string;
  /**
   * Short copies for latency: every copy the planner or growth builds has at most this many
   * times the stages its own memory forces (the fewest of its nodes, largest first, that hold
   * the model), at some cost in throughput (docs/cost.md "A stage bound"). A number >= 1.
   * @defaultValue no bound: the hop rule alone
   */
  readonly stageFactor?: number;
  /**
   * Memory reserved per layer for the KV cache, in GB: a node holding `n` layers of the model
   * keeps `n × kvReserveGb` free beside their weights, so a prefix cache has somewhere to live. The
   * planner, growth and the full-memory reading of a copy count a layer as `layerGb + kvReserveGb`
   * (docs/cost.md "Room for caches"). A number >= 0.
   * @defaultValue 0
   */
  readonly kvReserveGb?: number;
  /**
   * The KV cache one token takes over all the model's layers, in GB: with the plan's KV memory
   * it gives each copy's prefix-cache capacity (docs/prefix-cache.md). A number > 0.
   * @defaultValue 0.000128 (128 KB: Llama 3 8B in 16-bit precision)
   */
  readonly kvGbPerToken?: number;
}

/** A half-open layer range `[layerStart, layerEnd)` held by one node. */
export interface Stage {
  readonly nodeId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
}

/** One complete copy of one model: ordered stages covering `[0, layers)`. */
export interface Pipeline {
  readonly id: string;
  readonly modelId: string;
  readonly stages: readonly Stage[];
}

/** Who should run what: every pipeline of every model. */
export interface SwarmPlan {
  readonly models: readonly ModelSpec[];
  readonly pipelines: readonly Pipeline[];
}

/** How one node is now. Unmeasured values are absent, never zero. */
export interface NodeTelemetry {
  readonly alive: boolean;
  readonly latencyMs?: number;
  readonly load?: number;
  readonly score?: number;
  readonly samples: number;
  /**
   * True while its failure detector suspects it (docs/detection.md): routing takes a copy with a
   * suspect node only when every intact copy of the model has one. Absent otherwise.
   */
  readonly suspect?: boolean;
}

/** Telemetry of every node, keyed by node id. */
export type NodeStates = Readonly<Record<string, NodeTelemetry>>;

/** What routing and failover read: a plan and the telemetry of its nodes. */
export interface SwarmStateLike {
  readonly plan: SwarmPlan;
  readonly nodes: NodeStates;
}

/** The weights of the cost formula (docs/design.md §4); all default to 1. */
export interface CostWeights {
  readonly latency: number;
  readonly load: number;
  readonly capability: number;
  readonly hops: number;
  readonly tokens: number;
}

/** What an unmeasured value counts as: a node without telemetry is penalised, not ignored. */
export interface CostPenalties {
  /** @defaultValue 100 */
  readonly latencyMs: number;
  /** @defaultValue 1 */
  readonly load: number;
  /** @defaultValue 1 */
  readonly score: number;
}

/**
 * How a node's capability term is counted (docs/cost.md): `layer-aware` scales `100/score` by the
 * share of the model's layers the node runs on the route; `original` is the original design's `100/score`
 * per node whatever it holds.
 */
export type CostModel = 'layer-aware' | 'original';

/** One request to route. */
export interface RoutingRequest {
  /** @defaultValue 0 */
  readonly tokens?: number;
  readonly weights?: Partial<CostWeights>;
  readonly penalties?: Partial<CostPenalties>;
  /** @defaultValue 'layer-aware' */
  readonly costModel?: CostModel;
  /**
   * The prompt, as text or as the model's token ids: `tokens` defaults to ⌈characters ÷ 4⌉ (text)
   * or the count of ids, and a swarm prices the tokens the chosen copy holds cached at a share
   * (docs/prefix-cache.md). The pure router reads only its length.
   */
  readonly prompt?: string | readonly number[];
}

/** A chosen path through the swarm for one model. */
export interface Route {
  readonly modelId: string;
  /** The planned pipeline, or the pipeline a splice/degraded route was rebuilt from. */
  readonly pipelineId: string;
  readonly stages: readonly Stage[];
  /** Milliseconds-like cost from the formula of docs/design.md §4. */
  readonly cost: number;
  readonly hops: number;
  /** True only for a degraded recovery: layers are missing. */
  readonly degraded: boolean;
  /**
   * The prompt tokens the router estimates the chosen copy holds cached (docs/prefix-cache.md).
   * Present only on a swarm's route of a request with a prompt that did not opt out.
   */
  readonly cachedTokens?: number;
}

/** A half-open range of layers. */
export interface LayerRange {
  readonly layerStart: number;
  readonly layerEnd: number;
}

/** One lost range re-served by another node in a splice. */
export interface Replacement extends LayerRange {
  /** The dead node that held the range. */
  readonly from: string;
  /** The live node that now serves it. */
  readonly to: string;
}

/** How a route was recovered: in this order of preference. */
export type RecoveryStrategy = 'unaffected' | 'copy' | 'splice' | 'degraded';

/** The outcome of a failover (docs/design.md §6). */
export interface Recovery {
  /** The model being recovered: the lost route's model, even when a degraded route reports its reserve. */
  readonly modelId: string;
  readonly strategy: RecoveryStrategy;
  readonly degraded: boolean;
  readonly route: Route;
  /** The route that was lost. */
  readonly from: Route;
  readonly replaced: readonly Replacement[];
  readonly missingLayers: readonly LayerRange[];
}

/** Mints ids for new pipelines. */
export type IdSource = () => string;

/** The role the growth policy (telomerase) gave a newcomer. */
export type GrowthRole = 'restore' | 'copy' | 'expert' | 'spare';

/** A range of layers moved from a retired node to another. */
export interface Relocation {
  readonly pipelineId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly from: string;
  readonly to: string;
}

/** What growth does with a newcomer: the one shape the decision, the statechart's outcome and `addNode`'s answer share. */
export interface GrowthResult {
  readonly role: GrowthRole;
  /** The model it now serves, if any. */
  readonly modelId?: string;
  /** Pipelines created or rebuilt for it. */
  readonly pipelines: readonly string[];
  /** Broken pipelines it restored, now replaced by the rebuilt ones in `pipelines`. */
  readonly replaced: readonly string[];
  /** Layers that land on a node where they were not: at most one copy's layers (docs/cost.md). */
  readonly layersMoved: number;
}

/** What retirement does with a node's layers: the one shape the decision, the outcome and `removeNode`'s answer share. */
export interface RetirementResult {
  readonly relocated: readonly Relocation[];
  /** Pipelines that could not be rebuilt and were dropped whole. */
  readonly dropped: readonly string[];
  /** Layers relocated: at most the layers the retiring node held (docs/cost.md). */
  readonly layersMoved: number;
}
