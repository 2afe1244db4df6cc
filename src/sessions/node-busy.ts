/**
 * A stage call's node at capacity (docs/sessions.md, "A busy node"): the call failed, the node did
 * not. The session routes around it after its backoff, as for any failed call, but charges it
 * nothing towards ejection and tells no failure detector; the node keeps the session's state.
 */
import { describeValue } from '../core/describe.js';
import { RoutingError } from '../core/errors.js';

/** A node's answer that is none of its failures (busy here, or `StateLostError`): which node said so. */
export abstract class NodeAnswerError extends Error {
  /** The node that answered so. */
  readonly nodeId: string;

  constructor(nodeId: string, message: string, options?: ErrorOptions) {
    super(typeof message === 'string' ? message : describeValue(message), options);
    this.nodeId = typeof nodeId === 'string' ? nodeId : describeValue(nodeId);
  }
}

/**
 * What a stage runner rejects with when the node answered that it cannot take the call now (an
 * agent's 503 `Full`: its KV memory or its body budget taken). The call's outcome is `busy`.
 */
export class NodeBusyError extends NodeAnswerError {
  override readonly name = 'NodeBusyError';
}

/** `route()`, or undefined when no route avoids the busy node (the session then stays on it). */
export function aroundBusy<R>(route: () => R): R | undefined {
  try {
    return route();
  } catch (error) {
    if (error instanceof RoutingError) return undefined;
    throw error;
  }
}

/**
 * What a call's answer that charges no node asks of the session: `around` its stage's node (it was
 * busy), or `stay` and call the stage again fresh where it stood (a party checking its output was
 * busy, so the node already ran the step; or the node lost the session's state).
 */
export type BusyAnswer = 'around' | 'stay';

/**
 * The uncharged answer of a call on `nodeId` that ended with `result`; undefined for any other end.
 * A node loses a session's state once uncharged (`lostOn`, the session's): to a fresh call, or a
 * second time, it is a failure (an engine that cannot hold the state, or a node that says so to
 * every warm call to be sent the whole history again).
 */
export function busyAnswer(nodeId: string, result: { readonly ok: boolean; readonly outcome?: string; readonly error?: unknown }, fresh: boolean, lostOn: Set<string>): BusyAnswer | undefined {
  if (result.ok) return undefined;
  if (result.outcome === 'lost') {
    if (fresh || lostOn.has(nodeId)) return undefined;
    lostOn.add(nodeId);
    return 'stay';
  }
  if (result.outcome !== 'busy') return undefined;
  return !(result.error instanceof NodeBusyError) || result.error.nodeId === nodeId ? 'around' : 'stay';
}
