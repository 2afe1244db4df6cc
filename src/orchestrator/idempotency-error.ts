/**
 * The one error class of idempotent generation (docs/serve.md, "Idempotent generation"): a key
 * that is malformed, already running, reused for another request, a claim taken over, or a
 * checkpoint store that cannot be reached or holds its bound of records. Answered from serve's one table (error-answers.ts).
 */

/** Why an idempotent `POST /v1/generate` was refused or stopped. */
export type IdempotencyErrorCode = 'InvalidKey' | 'InProgress' | 'KeyReused' | 'ClaimLost' | 'Unavailable' | 'Full';

/** An idempotent generation's failure; `retryAfterMs` says when an `InProgress` key may be free. */
export class IdempotencyError extends Error {
  override readonly name = 'IdempotencyError';
  readonly code: IdempotencyErrorCode;
  readonly retryAfterMs: number | undefined;
  constructor(code: IdempotencyErrorCode, message: string, options?: ErrorOptions & { retryAfterMs?: number }) {
    super(message, options);
    this.code = code;
    this.retryAfterMs = options?.retryAfterMs;
  }
}
