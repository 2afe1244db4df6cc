/**
 * `POST /v1/sessions/drop` on the agent (docs/serve.md, "Cancellation"): the orchestrator ended a
 * session (it finished, failed, or its client went away); the agent aborts the session's running
 * stage calls and frees its caches. Signed with the swarm secret like a stage call
 * (auth/stage-guard.ts).
 */
import type { FastifyInstance } from 'fastify';
import { DROP_BODY_LIMIT, DROP_PATH, dropBodySchema, type DropRequest } from '../wire/drop-protocol.js';
import type { SessionDrops } from './session-drops.js';

/**
 * Registers the drop: `drops` aborts the running calls and remembers the id, `forget` frees the
 * session's caches and answers whether it held any.
 */
export function registerDropRoute(app: FastifyInstance, agentId: string, drops: SessionDrops, forget: (sessionId: string) => boolean): void {
  app.post<{ Body: DropRequest }>(DROP_PATH, { schema: { body: dropBodySchema }, bodyLimit: DROP_BODY_LIMIT }, async (request) => {
    const { sessionId } = request.body;
    drops.drop(sessionId);
    const held = forget(sessionId);
    return { nodeId: agentId, sessionId, held };
  });
}
