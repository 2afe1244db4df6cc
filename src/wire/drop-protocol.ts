/**
 * `POST /v1/sessions/drop`, orchestrator → agent: a session ended (finished, failed, or its client
 * went away); the agent aborts its running stage calls and frees its caches (docs/engine.md).
 */

/** The agent's path of a drop. */
export const DROP_PATH = '/v1/sessions/drop';

/** A drop's body: the session id as the agent saw it in the stage calls (with its orchestrator's prefix). */
export interface DropRequest {
  readonly sessionId: string;
}

/** JSON schema of {@link DropRequest}. */
export const dropBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['sessionId'],
  properties: { sessionId: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;

/** The largest body of a drop (bytes): a session id at its longest, escaped, fits. */
export const DROP_BODY_LIMIT = 4 * 1024;
