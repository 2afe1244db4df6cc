/** `POST /v1/generate`'s request, answer and schema: the stand-in digest generation's API (docs/serve.md). */

/** `POST /v1/generate`'s body. */
export interface GenerateRequest {
  readonly model: string;
  readonly prompt: string;
  readonly steps: number;
  /** Makes the request idempotent (as the `Idempotency-Key` header): docs/serve.md, "Idempotent generation". */
  readonly idempotencyKey?: string;
}

/** The answer: the output digest and how it was made. */
export interface GenerateReply {
  readonly model: string;
  readonly steps: number;
  /** The last step's output: 8 hex digits. */
  readonly digest: string;
  readonly sessionId: string;
  /** Stage failures the session resumed from. */
  readonly resumes: number;
  /** The last step's stages: which agent ran which layers, in order. */
  readonly path: readonly { readonly nodeId: string; readonly layers: readonly [number, number] }[];
  readonly ms: number;
  /** Steps taken from an idempotency key's checkpoint (a resumed request), when any. */
  readonly resumedFrom?: number;
}

/** JSON schema of {@link GenerateRequest}. */
export const generateBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['model', 'prompt', 'steps'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 200 },
    prompt: { type: 'string', maxLength: 65_536 },
    steps: { type: 'integer', minimum: 1, maximum: 4096 },
    idempotencyKey: { type: 'string' }, // checked by idempotency-key.ts, naming the field
  },
} as const;
