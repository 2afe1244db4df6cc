/**
 * The agent's check (docs/security.md): `POST /v1/stage`, `POST /v1/sessions/drop` and `POST /v1/spans/load` must be signed with the swarm secret;
 * anything else is refused with 401: before its body is read when its headers show it (no
 * signature, a stale timestamp, a used nonce), else before its body is validated or run.
 */
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../runtime/clock.js';
import type { TimeSource } from '../runtime/types.js';
import { DROP_PATH } from '../wire/drop-protocol.js';
import { LOAD_PATH } from '../wire/load-protocol.js';
import { ServeError } from '../wire/serve-error.js';
import { NonceCache } from '../wire/nonce-cache.js';
import { rawBody } from '../net/raw-body.js';
import { checkSignatureHeaders, DEFAULT_MAX_SKEW_MS, verifySignature } from '../wire/request-signing.js';

/** Registers the check on the agent's app (before its routes are added); `clock` reads wall time. */
export function guardStageCalls(app: FastifyInstance, secret: Uint8Array, clock: TimeSource = systemClock, maxSkewMs = DEFAULT_MAX_SKEW_MS): void {
  const nonces = new NonceCache(2 * maxSkewMs);
  const guarded = (url: string | undefined): boolean => url === '/v1/stage' || url === DROP_PATH || url === LOAD_PATH;
  app.addHook('onRequest', async (request) => {
    if (!guarded(request.routeOptions.url)) return;
    const refused = checkSignatureHeaders(request.headers, clock.now(), nonces, maxSkewMs);
    if (refused !== undefined) throw new ServeError('Unauthenticated', 401, `stage call refused: ${refused}`, { field: 'headers' });
  });
  app.addHook('preValidation', async (request) => {
    if (!guarded(request.routeOptions.url)) return;
    const verdict = verifySignature(secret, { method: request.method, path: request.url, headers: request.headers, body: rawBody(request) }, clock.now(), nonces, maxSkewMs);
    if (!verdict.ok) throw new ServeError('Unauthenticated', 401, `stage call refused: ${verdict.reason}`, { field: 'headers' });
  });
}
