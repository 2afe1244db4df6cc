/**
 * Error classes, one per domain, each with a literal `code` (docs/design.md §11). Messages name the
 * culprit (model, node, pipeline, field) and say what to do.
 */

import { describeValue } from './describe.js';

/** The message as given, or a description of a non-string (a message must never make the error throw). */
function messageText(message: unknown): string {
  return typeof message === 'string' ? message : describeValue(message);
}

/** Why routing failed. */
export type RoutingErrorCode = 'UnknownModel' | 'NoHealthyPipeline' | 'Unrecoverable' | 'InvalidRequest' | 'Saturated' | 'DeadlineExceeded' | 'Aborted';

/** A request could not be routed or admitted, or a failed route could not be recovered. */
export class RoutingError extends Error {
  override readonly name = 'RoutingError';
  readonly code: RoutingErrorCode;
  /** With `Saturated`: when to try again, in ms (an estimate: docs/admission.md). */
  readonly retryAfterMs?: number;
  constructor(code: RoutingErrorCode, message: string, options?: ErrorOptions & { readonly retryAfterMs?: number }) {
    super(messageText(message), options);
    this.code = code;
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/** Why planning failed. */
export type PlanErrorCode = 'InvalidInput' | 'InsufficientCapacity' | 'InvalidPlan';

/** A plan could not be made, or a hand-written plan is invalid. Never a partial plan. */
export class PlanError extends Error {
  override readonly name = 'PlanError';
  readonly code: PlanErrorCode;
  constructor(code: PlanErrorCode, message: string, options?: ErrorOptions) {
    super(messageText(message), options);
    this.code = code;
  }
}

/** Why a swarm operation was refused. */
export type SwarmErrorCode =
  | 'UnknownNode'
  | 'DuplicateNode'
  | 'Stopped'
  | 'BadTelemetry'
  | 'InvalidInput'
  | 'UnknownLease';

/** A swarm operation was refused; the swarm is left unchanged. */
export class SwarmError extends Error {
  override readonly name = 'SwarmError';
  readonly code: SwarmErrorCode;
  constructor(code: SwarmErrorCode, message: string, options?: ErrorOptions) {
    super(messageText(message), options);
    this.code = code;
  }
}

/** Why a session step or a session failed. */
export type SessionErrorCode =
  | 'InvalidInput'
  | 'Closed'
  | 'StepInProgress'
  | 'RetryBudgetExhausted'
  | 'DeadlineExceeded'
  | 'Aborted'
  | 'Unrecoverable'
  | 'HistoryTruncated'
  | 'ReplayOutputsMissing'
  | 'Disputed';

/**
 * How one call of a stage ended; `busy`: the runner rejected with the sessions' `NodeBusyError` (the
 * node at capacity), `lost`: with `StateLostError` (the node no longer holds the session's state);
 * neither is charged to the node.
 */
export type StageAttemptOutcome = 'ok' | 'rejected' | 'busy' | 'lost' | 'timeout' | 'node-down' | 'aborted' | 'deadline';

/** One call of one stage during a session: which node, which layers, how it ended. */
export interface StageAttempt {
  /** The session's step (0-based). */
  readonly step: number;
  readonly stageIndex: number;
  readonly nodeId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly outcome: StageAttemptOutcome;
  /** How many earlier inputs were replayed with the call. */
  readonly replayed: number;
  /** The stage's error message, for `rejected`. */
  readonly error?: string;
}

/**
 * A session step failed for good (budget, deadline, abort, no cover left) or the session was
 * misused. `attempts` lists every stage call of the failing step, in order, with its node; the
 * session holds no lease once this is thrown.
 */
export class SessionError extends Error {
  override readonly name = 'SessionError';
  readonly code: SessionErrorCode;
  readonly attempts: readonly StageAttempt[];
  constructor(code: SessionErrorCode, message: string, attempts: readonly StageAttempt[] = [], options?: ErrorOptions) {
    super(messageText(message), options);
    this.code = code;
    this.attempts = Array.isArray(attempts) ? attempts : [];
  }
}
