/** The wire format between the orchestrator and an agent: one stage call, its reply, its schema. */
import { STAGE_LIMITS } from './stage-bounds.js';

/** `POST /v1/stage`: run layers `[layerStart, layerEnd)` of one step of one session. */
export interface StageRequest {
  readonly sessionId: string;
  readonly modelId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly step: number;
  /** First call of this stage in the session: drop what is held for these layers, rebuild from `replay`. */
  readonly fresh: boolean;
  /** Tokens the input carries (the prompt's on the first step, 1 after). */
  readonly tokens: number;
  /** The activation, here a 32-bit digest. */
  readonly input: number;
  /** Earlier inputs at `layerStart`, oldest first, to rebuild the caches before `input`. */
  readonly replay: readonly number[];
  /** The prompt's text, on the first step: the agent's prefix cache finds its cached tokens. */
  readonly prompt?: string;
}

/** The agent's answer. */
export interface StageReply {
  readonly nodeId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly output: number;
  /** Outputs of `replay`, in order (the next replacement's replay, when it starts at `layerEnd`). */
  readonly replayOutputs: readonly number[];
  /** Milliseconds the call took on the agent. */
  readonly ms: number;
  /** With a prompt: its leading tokens the agent held cached (charged no prefill time). */
  readonly cachedTokens?: number;
}

const uint32 = { type: 'integer', minimum: 0, maximum: 4294967295 } as const;

/** JSON schema of {@link StageRequest} (fastify validates it; a failure names the field). */
export const stageBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['sessionId', 'modelId', 'layerStart', 'layerEnd', 'step', 'fresh', 'tokens', 'input', 'replay'],
  properties: {
    sessionId: { type: 'string', minLength: 1, maxLength: 200 },
    modelId: { type: 'string', minLength: 1, maxLength: 200 },
    layerStart: { type: 'integer', minimum: 0, maximum: STAGE_LIMITS.layers },
    layerEnd: { type: 'integer', minimum: 1, maximum: STAGE_LIMITS.layers },
    step: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    fresh: { type: 'boolean' },
    tokens: { type: 'integer', minimum: 1, maximum: STAGE_LIMITS.tokens },
    input: uint32,
    replay: { type: 'array', items: uint32, maxItems: STAGE_LIMITS.replay },
    prompt: { type: 'string', maxLength: STAGE_LIMITS.tokens * 4 },
  },
} as const;
