/**
 * Error classes, one per domain, each with a literal `code` (STYLE.md). Messages name the
 * culprit (model, node, pipeline, field) and say what to do.
 */

import { describeValue } from './describe.js';

/** The message as given, or a description of a non-string (a message must never make the error throw). */
function messageText(message: unknown): string {
  return typeof message === 'string' ? message : describeValue(message);
}

/** Why routing failed. */
export type RoutingErrorCode = 'UnknownModel' | 'NoHealthyPipeline' | 'Unrecoverable' | 'InvalidRequest';

/** A request could not be routed, or a failed route could not be recovered. */
export class RoutingError extends Error {
  override readonly name = 'RoutingError';
  readonly code: RoutingErrorCode;
  constructor(code: RoutingErrorCode, message: string, options?: ErrorOptions) {
    super(messageText(message), options);
    this.code = code;
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
