/**
 * What the orchestrator shows: `GET /v1/status` (the swarm, the plan and every agent, its state
 * read from the swarm and joined with its connection facts), `GET /v1/events` (server-sent events,
 * opening with the same view) and `GET /metrics` (Prometheus).
 */
import type { FastifyInstance } from 'fastify';
import { resolvePhiOptions, type PhiOptions } from '../core/phi.js';
import type { SessionOptions } from '../sessions/session-types.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import { detectorBounds } from './serve-detector.js';

/** Registers the status, events and metrics routes. */
export function registerStatusRoutes(app: FastifyInstance, parts: OrchestratorParts, failureDetector: PhiOptions, sessionOptions: SessionOptions): void {
  const { clock, registry, seat, events, metrics, models } = parts;
  const detector = { ...resolvePhiOptions(failureDetector), ...detectorBounds(failureDetector), heartbeatMs: 1000 };
  app.get('/v1/status', async () => {
    const swarm = seat.swarm;
    const replica = seat.replica;
    return {
      status: swarm?.status() ?? 'planning',
      ...(replica !== undefined ? { replication: replica.view() } : {}),
      models,
      plan: swarm?.state().plan ?? null,
      nodes: registry.view(clock.now(), seat.lifecycle),
      leases: swarm?.inFlight() ?? 0,
      detector,
      session: sessionOptions,
    };
  });
  app.get('/v1/events', (request, reply) => {
    reply.hijack();
    events.attach(reply.raw, { at: clock.now(), status: seat.swarm?.status() ?? 'planning', nodes: registry.view(clock.now(), seat.lifecycle) });
    request.raw.on('close', () => reply.raw.end());
  });
  app.get('/metrics', async (_request, reply) => {
    void reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
