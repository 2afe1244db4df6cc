/** The one error class of the HTTP orchestrator and the stand-in agent, with literal codes. */

/** Why a request to `hecate-node serve` or `hecate-node agent` was refused or failed. */
export type ServeErrorCode =
  | 'InvalidRequest'
  | 'UnknownNode'
  | 'UnknownSession'
  | 'NoSwarm'
  | 'Disconnected'
  | 'NoRoute'
  | 'SessionFailed'
  | 'StageFailed'
  | 'NotFound'
  | 'Conflict'
  | 'InProgress'
  | 'Unauthenticated'
  | 'KeyMismatch'
  | 'RateLimited'
  | 'Full'
  | 'Draining'
  | 'Internal';

/** An HTTP-facing failure: `status` is the response's status, `field` the request field at fault. */
export class ServeError extends Error {
  override readonly name = 'ServeError';
  readonly code: ServeErrorCode;
  readonly status: number;
  readonly field: string | undefined;
  /** When to try again, in ms: sent as `Retry-After` (whole seconds, at least 1). */
  readonly retryAfterMs: number | undefined;
  constructor(code: ServeErrorCode, status: number, message: string, options?: ErrorOptions & { field?: string; retryAfterMs?: number }) {
    super(message, options);
    this.code = code;
    this.status = status;
    this.field = options?.field;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** The JSON body of every error response: `{ error: { code, message, field? } }`. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly field?: string };
}

/** The body of an error response. */
export function errorBody(code: string, message: string, field?: string): ErrorBody {
  return { error: { code, message, ...(field !== undefined ? { field } : {}) } };
}

/**
 * The request field a fastify/ajv validation error names: the property path (`steps`,
 * `replay/3`) or the missing property; `body` when it is the whole body.
 */
export function validationField(validation: readonly { instancePath?: string; params?: Record<string, unknown> }[] | undefined): string {
  const first = validation?.[0];
  if (first === undefined) return 'body';
  const missing = first.params?.['missingProperty'];
  const extra = first.params?.['additionalProperty'];
  const base = (first.instancePath ?? '').replace(/^\//, '');
  if (typeof missing === 'string') return base ? `${base}/${missing}` : missing;
  if (typeof extra === 'string') return base ? `${base}/${extra}` : extra;
  return base || 'body';
}
