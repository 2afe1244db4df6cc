/**
 * The agent's check (docs/security.md, "Signed requests"): `POST /v1/stage`,
 * `POST /v1/sessions/drop`, `POST /v1/spans/load` and the upstream agent's forwarding routes must be
 * signed with the swarm secret for this agent (`agent/<id>`); anything else is refused with 401:
 * before its body is read when its headers show it (no signature, another agent's, a timestamp
 * out of the window or from before this process took calls, a used nonce), else before its body is
 * validated or run. The agent keeps its nonces in memory only: after a restart it takes no call
 * stamped before its start plus {@link AGENT_MAX_AHEAD_MS}, so none it took before is taken again.
 */
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../runtime/clock.js';
import type { TimeSource } from '../runtime/types.js';
import { DROP_PATH } from '../wire/drop-protocol.js';
import { LOAD_PATH } from '../wire/load-protocol.js';
import { UPSTREAM_PATHS } from './upstream/upstream-route.js';
import { ServeError } from '../wire/serve-error.js';
import { NonceCache } from '../wire/nonce-cache.js';
import { rawBody } from '../net/raw-body.js';
import { agentAudience, checkSignatureHeaders, DEFAULT_MAX_SKEW_MS, verifySignature, type SignatureWindow } from '../wire/request-signing.js';

/**
 * How far ahead of the agent's clock an orchestrator's timestamp may be, and so how long after its
 * start the agent takes no call (it joins no sooner). Behind, the usual 30 s.
 */
export const AGENT_MAX_AHEAD_MS = 500;

/** The routes the check guards. */
const GUARDED: ReadonlySet<string> = new Set(['/v1/stage', DROP_PATH, LOAD_PATH, UPSTREAM_PATHS.completions, UPSTREAM_PATHS.chat]);

/**
 * Registers the check on agent `id`'s app (before its routes are added); `clock` reads wall time.
 * @returns when (on `clock`) the agent takes calls: its join must not be sooner
 */
export function guardStageCalls(app: FastifyInstance, secret: Uint8Array, id: string, clock: TimeSource = systemClock, maxSkewMs = DEFAULT_MAX_SKEW_MS): { readonly notBefore: number } {
  const window: SignatureWindow = { audience: agentAudience(id), maxSkewMs, maxAheadMs: AGENT_MAX_AHEAD_MS, notBefore: Math.round(clock.now()) + AGENT_MAX_AHEAD_MS };
  const nonces = new NonceCache(maxSkewMs + AGENT_MAX_AHEAD_MS);
  const guarded = (url: string | undefined): boolean => url !== undefined && GUARDED.has(url);
  // Callback hooks, not async ones: every stage call passes both, and a promise each is measurable there (docs/performance.md, "Data plane").
  app.addHook('onRequest', (request, _reply, done) => {
    if (!guarded(request.routeOptions.url)) return done();
    const refused = checkSignatureHeaders(request.headers, clock.now(), nonces, window);
    done(refused === undefined ? undefined : new ServeError('Unauthenticated', 401, `agent "${id}" refused the call: ${refused}`, { field: 'headers' }));
  });
  app.addHook('preValidation', (request, _reply, done) => {
    if (!guarded(request.routeOptions.url)) return done();
    const verdict = verifySignature(secret, { method: request.method, path: request.url, headers: request.headers, body: rawBody(request) }, clock.now(), nonces, window);
    done(verdict.ok ? undefined : new ServeError('Unauthenticated', 401, `agent "${id}" refused the call: ${verdict.reason}`, { field: 'headers' }));
  });
  return { notBefore: window.notBefore as number };
}
