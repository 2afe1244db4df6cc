/**
 * What the orchestrator shows: `GET /v1/status` (the swarm, the plan and every agent, read from
 * the owners of its facts: agent-view.ts), `GET /v1/events` (server-sent events,
 * opening with the same view) and `GET /metrics` (Prometheus). On a guarded orchestrator an
 * agent's address is the operator's to see: a client's view, and its events, have `url: null`
 * (docs/security.md).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { resolvePhiOptions, type PhiOptions } from '../core/phi.js';
import type { SessionOptions } from '../sessions/session-types.js';
import { agentViews, type AgentView } from './agent-view.js';
import { isClientView } from './auth/orchestrator-guard.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import { detectorBounds } from './serve-detector.js';
import { ServeError } from '../wire/serve-error.js';

/** Agents in one page of `GET /v1/status` unless `limit` says otherwise; `limit` is at most {@link STATUS_PAGE_MAX}. */
export const STATUS_PAGE = 200;
/** The largest page of `GET /v1/status`. */
export const STATUS_PAGE_MAX = 1000;

/** A query parameter as a whole number in [min, max], or `fallback` when absent. @throws {ServeError} 400 naming it */
function pageParam(query: Record<string, string | undefined>, name: string, min: number, max: number, fallback: number): number {
  const raw = query[name];
  if (raw === undefined) return fallback;
  const n = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= min && n <= max)) throw new ServeError('InvalidRequest', 400, `${name}: must be a whole number from ${min} to ${max}, got "${raw.slice(0, 40)}"`, { field: name });
  return n;
}

/** The agents as `request`'s caller may see them: a client, without their addresses. */
function shown(request: FastifyRequest, views: AgentView[]): AgentView[] {
  return isClientView(request) ? views.map((v) => ({ ...v, url: null })) : views;
}

/** Registers the status, events and metrics routes. */
export function registerStatusRoutes(app: FastifyInstance, parts: OrchestratorParts, failureDetector: PhiOptions, sessionOptions: SessionOptions): void {
  const { clock, seat, events, metrics, models } = parts;
  const detector = { ...resolvePhiOptions(failureDetector), ...detectorBounds(failureDetector), heartbeatMs: 1000 };
  // Paged by agents (sorted by id): `nodes` holds `limit` of them from `offset`; `nextOffset` is the next page's, null on the last.
  app.get<{ Querystring: { offset?: string; limit?: string } }>('/v1/status', async (request) => {
    const swarm = seat.swarm;
    const replica = seat.replica;
    const offset = pageParam(request.query, 'offset', 0, 1_000_000, 0);
    const limit = pageParam(request.query, 'limit', 1, STATUS_PAGE_MAX, STATUS_PAGE);
    const all = shown(request, agentViews(parts, clock.now()));
    const end = Math.min(all.length, offset + limit);
    return {
      status: swarm?.status() ?? 'planning',
      ...(replica !== undefined ? { replication: replica.view() } : {}),
      models,
      plan: swarm?.state().plan ?? null,
      nodes: all.slice(offset, end),
      nodesTotal: all.length,
      nextOffset: end < all.length ? end : null,
      leases: swarm?.inFlight() ?? 0,
      detector,
      session: sessionOptions,
    };
  });
  app.get('/v1/events', (request, reply) => {
    reply.hijack();
    events.attach(reply.raw, { at: clock.now(), status: seat.swarm?.status() ?? 'planning', nodes: shown(request, agentViews(parts, clock.now())) }, isClientView(request));
    request.raw.on('close', () => reply.raw.end());
  });
  app.get('/metrics', async (_request, reply) => {
    void reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
