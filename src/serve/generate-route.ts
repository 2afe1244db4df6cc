/**
 * `POST /v1/generate` on the orchestrator: one session on the seated swarm's local Swarm (a
 * replica's own, its session ids prefixed with the replica's name), counted in the metrics.
 */
import type { FastifyInstance } from 'fastify';
import type { SessionOptions } from '../sessions/session-types.js';
import { generate, generateBodySchema, type GenerateRequest } from './generate.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import type { PeerPost } from './peer-post.js';
import { asServeError } from './error-answers.js';
import { ServeError } from './serve-error.js';
import { IdempotencyError } from './idempotency-error.js';
import { idempotencyKeyOf } from './idempotency-key.js';
import { cancelOnDisconnect, generateIdempotent, type GenerateProgress, type IdempotencySettings } from './idempotent-generate.js';
import { DEFAULT_WORK, type WorkModel } from './work-bounds.js';
import type { SpanChecks } from './verify-span.js';

/**
 * Registers `POST /v1/generate`; stage calls go out through `post` (signed, trusting the CA:
 * peer-post.ts); a request with an idempotency key is kept in `idempotency`'s store; `checks`,
 * when given, verifies a share of the stage calls on other copies (verify-span.ts).
 */
export function registerGenerateRoute(app: FastifyInstance, parts: OrchestratorParts, sessionOptions: SessionOptions, work: WorkModel = DEFAULT_WORK, post?: PeerPost, idempotency?: IdempotencySettings, checks?: SpanChecks): void {
  const { clock, registry, seat, metrics, models } = parts;
  app.post<{ Body: GenerateRequest }>('/v1/generate', { schema: { body: generateBodySchema } }, async (request, response) => {
    const started = clock.now();
    try {
      const swarm = seat.local();
      if (swarm === undefined) throw new ServeError('NoSwarm', 503, `no swarm yet: the agents that joined (${[...registry.all()].map((r) => r.id).join(', ') || 'none'}) cannot hold every copy of ${models.map((m) => `"${m.id}"`).join(', ')}`);
      const replica = seat.replica;
      const run = (progress?: GenerateProgress) => generate(swarm, registry, metrics, request.body, sessionOptions, clock, replica === undefined ? '' : `${replica.view().replica}/`, work, post, progress, checks);
      const key = idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey);
      const reply = key === undefined || idempotency === undefined ? await run() : await generateIdempotent(key, request.body, idempotency, clock, cancelOnDisconnect(response.raw), run);
      metrics.requests.inc({ outcome: 'ok' });
      metrics.requestSeconds.observe((clock.now() - started) / 1000);
      return reply;
    } catch (error) {
      if (error instanceof IdempotencyError && error.retryAfterMs !== undefined) void response.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))));
      const served = asServeError(error);
      metrics.requests.inc({ outcome: served instanceof ServeError ? served.code : 'Internal' });
      throw served;
    }
  });
}
