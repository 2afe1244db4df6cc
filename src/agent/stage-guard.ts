/**
 * The agent's check (docs/security.md): `POST /v1/stage`, `POST /v1/sessions/drop` and `POST /v1/spans/load` must be signed with the swarm secret;
 * anything else is refused with 401 before its body is validated or run.
 */
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../runtime/clock.js';
import type { TimeSource } from '../runtime/types.js';
import { DROP_PATH } from '../wire/drop-protocol.js';
import { LOAD_PATH } from '../wire/load-protocol.js';
import { ServeError } from '../wire/serve-error.js';
import { NonceCache } from '../wire/nonce-cache.js';
import { keepRawBody, rawBody } from '../net/raw-body.js';
import { DEFAULT_MAX_SKEW_MS, verifySignature } from '../wire/request-signing.js';

/** Registers the check on the agent's app (before its routes are added); `clock` reads wall time. */
export function guardStageCalls(app: FastifyInstance, secret: Uint8Array, clock: TimeSource = systemClock, maxSkewMs = DEFAULT_MAX_SKEW_MS): void {
  const nonces = new NonceCache(2 * maxSkewMs);
  keepRawBody(app);
  app.addHook('preValidation', async (request) => {
    if (request.routeOptions.url !== '/v1/stage' && request.routeOptions.url !== DROP_PATH && request.routeOptions.url !== LOAD_PATH) return;
    const verdict = verifySignature(secret, { method: request.method, path: request.url, headers: request.headers, body: rawBody(request) }, clock.now(), nonces, maxSkewMs);
    if (!verdict.ok) throw new ServeError('Unauthenticated', 401, `stage call refused: ${verdict.reason}`, { field: 'headers' });
  });
}
