/**
 * The HTTP answer to every error the library can throw into a request of `hecate-node serve`: one
 * table, library error code → status and the response's code (docs/serve.md, "Every error and its HTTP status", shows the
 * same table; a test holds them equal). Nothing the library throws becomes a 500 by accident: a
 * 500 is only for the two codes that can only mean a bug of the orchestrator itself.
 */
import { PlanError, RoutingError, SessionError, SwarmError, type PlanErrorCode, type RoutingErrorCode, type SessionErrorCode, type SwarmErrorCode } from '../core/errors.js';
import { ReplicationError, type ReplicationErrorCode } from '../replication/replication-error.js';
import { ServeError, type ServeErrorCode } from '../wire/serve-error.js';
import { IdempotencyError, type IdempotencyErrorCode } from './idempotency-error.js';

/** How one library error code is answered: the status, the response's `code`, the request field at fault. */
export interface HttpAnswer {
  readonly status: number;
  readonly code: ServeErrorCode;
  readonly field?: string;
}

const answer = (status: number, code: ServeErrorCode, field?: string): HttpAnswer => Object.freeze({ status, code, ...(field !== undefined ? { field } : {}) });

/** Every code of every library error class, with its answer (the `satisfies` makes a new code a compile error until it is mapped). */
export const LIBRARY_ERROR_ANSWERS = Object.freeze({
  RoutingError: Object.freeze({
    UnknownModel: answer(400, 'InvalidRequest', 'model'),
    InvalidRequest: answer(400, 'InvalidRequest'),
    // Nothing left to serve the model with: the swarm is short of nodes now, not the request wrong.
    NoHealthyPipeline: answer(503, 'NoRoute'),
    Unrecoverable: answer(503, 'NoRoute'),
    // Admission (docs/admission.md): every copy full and the queue full, or a sheddable request; its deadline; its signal.
    Saturated: answer(429, 'RateLimited'),
    DeadlineExceeded: answer(504, 'NoRoute'),
    Aborted: answer(503, 'NoRoute'),
  } satisfies Record<RoutingErrorCode, HttpAnswer>),
  SessionError: Object.freeze({
    // The orchestrator built the session from its own settings: a refused one is its bug.
    InvalidInput: answer(500, 'Internal'),
    StepInProgress: answer(500, 'Internal'),
    // The agents failed the step, past the retry budget, or one answered without its replay outputs.
    RetryBudgetExhausted: answer(502, 'SessionFailed'),
    ReplayOutputsMissing: answer(502, 'SessionFailed'),
    // A stage's output and its check disagreed and no third holder settled it: nothing unchecked is answered.
    Disputed: answer(502, 'SessionFailed'),
    // No live node holds some layer (only a degraded route), or the history to rebuild one is gone:
    // the swarm cannot serve it now; a retry may succeed.
    Unrecoverable: answer(503, 'SessionFailed'),
    HistoryTruncated: answer(503, 'SessionFailed'),
    // Closed or aborted under the request: the orchestrator is shutting down.
    Closed: answer(503, 'SessionFailed'),
    Aborted: answer(503, 'SessionFailed'),
    DeadlineExceeded: answer(504, 'SessionFailed'),
  } satisfies Record<SessionErrorCode, HttpAnswer>),
  SwarmError: Object.freeze({
    InvalidInput: answer(400, 'InvalidRequest'),
    BadTelemetry: answer(400, 'InvalidRequest'),
    UnknownNode: answer(404, 'UnknownNode'),
    DuplicateNode: answer(409, 'Conflict'),
    UnknownLease: answer(409, 'Conflict'),
    // Stopped: the swarm is being replaced (re-planned); none serves until the next one is up.
    Stopped: answer(503, 'NoSwarm'),
  } satisfies Record<SwarmErrorCode, HttpAnswer>),
  PlanError: Object.freeze({
    InvalidInput: answer(400, 'InvalidRequest'),
    // The plan refuses the change (it would not validate).
    InvalidPlan: answer(409, 'Conflict'),
    // Too few agents to hold every copy.
    InsufficientCapacity: answer(503, 'NoSwarm'),
  } satisfies Record<PlanErrorCode, HttpAnswer>),
  ReplicationError: Object.freeze({
    // The orchestrator's own replication settings were refused, or its log holds what no writer wrote: its bug.
    InvalidInput: answer(500, 'Internal'),
    BadLog: answer(500, 'Internal'),
    // A lifecycle command that could not reach the log (`--nats`): the orchestrator is cut off.
    Disconnected: answer(503, 'Disconnected'),
    Closed: answer(503, 'Disconnected'),
    NoGenesis: answer(503, 'NoSwarm'),
    // The replica stopped applying: the log holds a format it does not read (an upgrade under
    // way), or it fell behind the log's trim. It serves its last view; commands cannot commit.
    UnknownVersion: answer(503, 'Disconnected'),
    Trimmed: answer(503, 'Disconnected'),
    // The NATS server refused this orchestrator's credentials or TLS; or its own entry was refused
    // when applied (its clock 30 s off the server's): either way nothing it proposes commits.
    Refused: answer(503, 'Disconnected'),
    Rejected: answer(503, 'Disconnected'),
  } satisfies Record<ReplicationErrorCode, HttpAnswer>),
  IdempotencyError: Object.freeze({
    InvalidKey: answer(400, 'InvalidRequest', 'idempotencyKey'),
    // Another orchestrator (or request) holds the key: retry after the Retry-After header's seconds.
    InProgress: answer(409, 'InProgress', 'idempotencyKey'),
    KeyReused: answer(409, 'Conflict', 'idempotencyKey'),
    // This orchestrator's claim ran out and another took the key over: that one answers the retry.
    ClaimLost: answer(409, 'Conflict', 'idempotencyKey'),
    Unavailable: answer(503, 'Disconnected'),
    // The store holds its bound of records: retry once the oldest expires (Retry-After).
    Full: answer(429, 'Full', 'idempotencyKey'),
  } satisfies Record<IdempotencyErrorCode, HttpAnswer>),
});

/** The answer to a library error, from {@link LIBRARY_ERROR_ANSWERS}; undefined for any other error. */
export function libraryErrorAnswer(error: unknown): HttpAnswer | undefined {
  const table: Readonly<Record<string, HttpAnswer>> | undefined =
    error instanceof RoutingError
      ? LIBRARY_ERROR_ANSWERS.RoutingError
      : error instanceof SessionError
        ? LIBRARY_ERROR_ANSWERS.SessionError
        : error instanceof SwarmError
          ? LIBRARY_ERROR_ANSWERS.SwarmError
          : error instanceof PlanError
            ? LIBRARY_ERROR_ANSWERS.PlanError
            : error instanceof ReplicationError
              ? LIBRARY_ERROR_ANSWERS.ReplicationError
              : error instanceof IdempotencyError
                ? LIBRARY_ERROR_ANSWERS.IdempotencyError
                : undefined;
  if (table === undefined) return undefined;
  const code = (error as { code: string }).code;
  return Object.hasOwn(table, code) ? table[code] : undefined;
}

/**
 * A library error as the {@link ServeError} to answer, its message starting with the library's
 * own code (`NoHealthyPipeline: …`), its `retryAfterMs` (a `Saturated` refusal's) kept for the
 * `Retry-After` header; a session that failed only on busy nodes as 503 `Full` (retry after 1 s);
 * any other error as it is.
 */
export function asServeError(error: unknown): unknown {
  // Every call that failed met a node at capacity (503 Full): the swarm is full now, not broken — 503, to retry.
  if (error instanceof SessionError && error.code === 'RetryBudgetExhausted' && onlyBusy(error)) return new ServeError('Full', 503, `Full: ${error.message}`, { cause: error, retryAfterMs: 1000 });
  const found = libraryErrorAnswer(error);
  if (found === undefined) return error;
  const { code, message } = error as { code: string; message: string };
  const retryAfterMs = (error as { retryAfterMs?: unknown }).retryAfterMs; // Saturated's estimate: answered as Retry-After
  return new ServeError(found.code, found.status, `${code}: ${message}`, { cause: error, ...(found.field !== undefined ? { field: found.field } : {}), ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}) });
}

/** Whether a session failed only on busy nodes (docs/sessions.md, "A busy node"). */
function onlyBusy(error: SessionError): boolean {
  const failed = error.attempts.filter((a) => a.outcome !== 'ok');
  return failed.length > 0 && failed.every((a) => a.outcome === 'busy');
}
