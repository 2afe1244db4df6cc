/**
 * `POST /v1/nodes/:id/kv` (docs/prefix-cache.md, "Precise mode"): a joined agent's report of its
 * engine's KV blocks, signed as its heartbeats. The swarm's precise feeds take it; the answer
 * `{ snapshot: true }` asks the agent for its whole block set (a new node, a restart, a gap, a
 * changed plan). Before there is a swarm the report is heard and dropped.
 */
import type { FastifyInstance } from 'fastify';
import { kvReportIssue, type KvReport } from '../prefix/kv-feed.js';
import { nodeParamsSchema } from '../wire/member-protocol.js';
import { ServeError } from '../wire/serve-error.js';
import type { OrchestratorParts } from './orchestrator-parts.js';

/** The largest report (bytes): a snapshot of 8,192 blocks of 32 ids fits. */
export const KV_REPORT_BODY_LIMIT = 8 * 1024 * 1024;

/** Registers the route. */
export function registerKvReportRoute(app: FastifyInstance, parts: OrchestratorParts): void {
  app.post<{ Params: { id: string } }>('/v1/nodes/:id/kv', { schema: { params: nodeParamsSchema }, bodyLimit: KV_REPORT_BODY_LIMIT }, (request) => {
    const id = request.params.id;
    const record = parts.registry.get(id);
    if (record === undefined || record.url === undefined || record.left) throw new ServeError('UnknownNode', 404, `no agent "${id}" has joined; POST /v1/nodes first`, { field: 'id' });
    const issue = kvReportIssue(request.body);
    if (issue !== undefined) throw new ServeError('InvalidRequest', 400, issue, { field: issue.slice(0, issue.indexOf(':')) });
    return { snapshot: parts.seat.swarm === undefined ? false : parts.kv.accept(id, request.body as KvReport) };
  });
}
