/**
 * `POST /v1/spans/load`, orchestrator → agent: load a span a rebalance moved here, before any
 * stage call is routed to it (docs/rebalance.md "Replicas, serve and agents"). The agent loads it
 * through its engine's `load` and answers how long that took.
 */

/** The agent's path of a span load. */
export const LOAD_PATH = '/v1/spans/load';

/** A span load's body: the span, and the load time the orchestrator modelled for it. */
export interface LoadRequest {
  readonly modelId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  /** The model's whole layer count. */
  readonly layers: number;
  /** The orchestrator's modelled load time in seconds (bytes ÷ the node's load bandwidth): a stand-in engine takes it. */
  readonly seconds?: number;
}

/** The agent's answer: how long the load took, measured there. */
export interface LoadReply {
  readonly nodeId: string;
  readonly ms: number;
}

/** JSON schema of {@link LoadRequest}. */
export const loadBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['modelId', 'layerStart', 'layerEnd', 'layers'],
  properties: {
    modelId: { type: 'string', minLength: 1, maxLength: 200 },
    layerStart: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    layerEnd: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    layers: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    seconds: { type: 'number', minimum: 0, maximum: 86_400 },
  },
} as const;
