/**
 * `POST /v1/generate` on the orchestrator: one session on the seated swarm's local Swarm (a
 * replica's own, its session ids prefixed with the replica's name), counted in the metrics.
 */
import type { FastifyInstance } from 'fastify';
import type { SessionOptions } from '../sessions/session-types.js';
import { generate, generateBodySchema, type GenerateRequest } from './generate.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import type { PeerPost } from './peer-post.js';
import { ServeError } from './serve-error.js';
import { DEFAULT_WORK, type WorkModel } from './work-bounds.js';
import type { SpanChecks } from './verify-span.js';

/** Registers `POST /v1/generate`; stage calls go out through `post` (signed, trusting the CA: peer-post.ts). */
export function registerGenerateRoute(app: FastifyInstance, parts: OrchestratorParts, sessionOptions: SessionOptions, work: WorkModel = DEFAULT_WORK, post?: PeerPost, checks?: SpanChecks): void {
  const { clock, registry, seat, metrics, models } = parts;
  app.post<{ Body: GenerateRequest }>('/v1/generate', { schema: { body: generateBodySchema } }, async (request) => {
    const started = clock.now();
    try {
      const swarm = seat.local();
      if (swarm === undefined) throw new ServeError('NoSwarm', 503, `no swarm yet: the agents that joined (${[...registry.all()].map((r) => r.id).join(', ') || 'none'}) cannot hold every copy of ${models.map((m) => `"${m.id}"`).join(', ')}`);
      const replica = seat.replica;
      const reply = await generate(swarm, registry, metrics, request.body, sessionOptions, clock, replica === undefined ? '' : `${replica.view().replica}/`, work, post, checks);
      metrics.requests.inc({ outcome: 'ok' });
      metrics.requestSeconds.observe((clock.now() - started) / 1000);
      return reply;
    } catch (error) {
      metrics.requests.inc({ outcome: error instanceof ServeError ? error.code : 'Internal' });
      throw error;
    }
  });
}
