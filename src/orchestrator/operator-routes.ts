/**
 * The operator's removal of members (docs/security.md, "Roles"): `DELETE /v1/nodes/:id` and
 * `DELETE /v1/nodes?pattern=P` (`*` matches any run of characters). A removed member leaves as
 * if it had sent its leave, and is then forgotten from the address book; its id stays bound to its
 * key, so an impostor cannot take it. The guard lets only the operator token's bearer call them
 * (auth/orchestrator-guard.ts).
 */
import type { FastifyInstance } from 'fastify';
import { leave } from './agent-routes.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import { nodeParamsSchema } from '../wire/member-protocol.js';
import { ServeError } from '../wire/serve-error.js';

/** A member as the operator's call removed it: how it left the plan. */
export interface Removal {
  readonly id: string;
  readonly how: string;
}

/** A pattern's matcher: `*` any run of characters, everything else itself. @throws {ServeError} 400 naming `pattern` */
export function idPattern(pattern: string): RegExp {
  if (!/^[A-Za-z0-9._:*-]{1,200}$/.test(pattern)) throw new ServeError('InvalidRequest', 400, `pattern: 1 to 200 of letters, digits, ".", "_", ":", "-" and "*", got "${pattern.slice(0, 200)}"`, { field: 'pattern' });
  return new RegExp(`^${pattern.replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`);
}

/** Removes member `id`: it leaves, then is forgotten. @throws {ServeError} 404 `UnknownNode` when no agent of that id is joined */
async function remove(parts: OrchestratorParts, id: string): Promise<Removal> {
  const record = parts.registry.get(id);
  if (record === undefined || record.url === undefined) throw new ServeError('UnknownNode', 404, `no agent "${id}" has joined`, { field: 'id' });
  const how = record.left ? 'left' : (await leave(parts, id)).how;
  parts.registry.forget(id);
  parts.log(`the operator removed agent "${id}" (${how})`);
  return { id, how };
}

/** Registers the operator's removal routes. */
export function registerOperatorRoutes(app: FastifyInstance, parts: OrchestratorParts): void {
  app.delete<{ Params: { id: string } }>('/v1/nodes/:id', { schema: { params: nodeParamsSchema } }, async (request) => ({ removed: [await remove(parts, request.params.id)] }));
  app.delete<{ Querystring: { pattern?: string } }>('/v1/nodes', async (request) => {
    const raw = request.query.pattern;
    if (raw === undefined) throw new ServeError('InvalidRequest', 400, 'pattern: required (DELETE /v1/nodes?pattern=P; "*" matches any run of characters)', { field: 'pattern' });
    const match = idPattern(raw);
    const ids = [...parts.registry.all()].filter((r) => r.url !== undefined && match.test(r.id)).map((r) => r.id);
    const removed: Removal[] = [];
    for (const id of ids) removed.push(await remove(parts, id));
    return { removed };
  });
}
