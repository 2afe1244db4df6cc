/**
 * A stage call's node that no longer holds the session's state for its span (docs/sessions.md,
 * "A node that lost the state"): evicted under memory pressure, or never given it. The node did
 * not fail: the call goes again to the same node, fresh, with its replay, and nothing is charged.
 */
import { NodeAnswerError } from './node-busy.js';

/**
 * What a stage runner rejects with when the node answered that it does not hold the session's
 * earlier steps (an agent's 409 `UnknownSession`: "send it fresh with its replay"). The call's
 * outcome is `lost`.
 */
export class StateLostError extends NodeAnswerError {
  override readonly name = 'StateLostError';
}
