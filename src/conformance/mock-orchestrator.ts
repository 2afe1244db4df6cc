/**
 * The conformance runner's stand-in orchestrator: it takes the agent's join (checking its
 * signature when the runner has the swarm secret), answers it with the runner's model, counts its
 * heartbeats and its leave (docs/engine.md, "Join and heartbeat").
 */
import type { FastifyInstance } from 'fastify';
import { createHttpApp, listen } from '../net/http-app.js';
import { rawBody } from '../net/raw-body.js';
import { randomBytes } from 'node:crypto';
import { AUDIENCE_PATH, joinBodySchema, type AudienceAnswer, type JoinBody } from '../wire/member-protocol.js';
import { NonceCache } from '../wire/nonce-cache.js';
import { SIGNING_PROTOCOL, verifySignature } from '../wire/request-signing.js';
import { ServeError } from '../wire/serve-error.js';

/** What the stand-in saw of the agents that joined it. */
export interface MemberLog {
  /** Joins accepted, in order. */
  readonly joins: JoinBody[];
  /** Joins refused for their signature, with why. */
  readonly refused: string[];
  /** Heartbeats per id. */
  readonly heartbeats: Map<string, number>;
  /** Ids that left. */
  readonly left: string[];
}

/** A running stand-in orchestrator. */
export interface MockOrchestrator {
  readonly url: string;
  readonly log: MemberLog;
  /** Resolves with the first join accepted (of the agent at `agentUrl`, when given). */
  joined(agentUrl: string | undefined, timeoutMs: number): Promise<JoinBody | undefined>;
  /** Resolves once `id` has heartbeat at least once. */
  heartbeat(id: string, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Starts the stand-in on `host:port`, answering joins with `model`. */
export async function startMockOrchestrator(options: { readonly host: string; readonly port: number; readonly model: { readonly id: string; readonly layers: number }; readonly secret?: Uint8Array }): Promise<MockOrchestrator> {
  const log: MemberLog = { joins: [], refused: [], heartbeats: new Map(), left: [] };
  const app: FastifyInstance = createHttpApp();
  const nonces = new NonceCache(60_000);
  // As an orchestrator alone: its own audience, new each run (orchestrator-guard.ts).
  const audience = `orchestrator/${randomBytes(16).toString('hex')}`;
  app.get(AUDIENCE_PATH, async (): Promise<AudienceAnswer> => ({ audience, signing: SIGNING_PROTOCOL }));
  if (options.secret !== undefined) {
    const secret = options.secret;
    app.addHook('preValidation', async (request) => {
      if (request.method === 'GET') return;
      const verdict = verifySignature(secret, { method: request.method, path: request.url, headers: request.headers, body: rawBody(request) }, Date.now(), nonces, { audience });
      if (!verdict.ok) {
        log.refused.push(`${request.method} ${request.url}: ${verdict.reason}`);
        throw new ServeError('Unauthenticated', 401, verdict.reason);
      }
    });
  }
  app.post<{ Body: JoinBody }>('/v1/nodes', { schema: { body: joinBodySchema } }, async (request) => {
    log.joins.push(request.body);
    return { id: request.body.id, models: [{ id: options.model.id, layers: options.model.layers }] };
  });
  app.post<{ Params: { id: string } }>('/v1/nodes/:id/heartbeat', async (request) => {
    log.heartbeats.set(request.params.id, (log.heartbeats.get(request.params.id) ?? 0) + 1);
    return {};
  });
  app.post<{ Params: { id: string } }>('/v1/nodes/:id/leave', async (request) => {
    log.left.push(request.params.id);
    return {};
  });
  const url = await listen(app, options.host, options.port);
  const poll = async <T>(found: () => T | undefined, timeoutMs: number): Promise<T | undefined> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const value = found();
      if (value !== undefined || Date.now() >= until) return value;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  return {
    url,
    log,
    joined: (agentUrl, timeoutMs) => poll(() => log.joins.find((j) => agentUrl === undefined || j.url.replace(/\/+$/, '') === agentUrl.replace(/\/+$/, '')), timeoutMs),
    heartbeat: async (id, timeoutMs) => (await poll(() => ((log.heartbeats.get(id) ?? 0) > 0 ? true : undefined), timeoutMs)) === true,
    close: () => app.close(),
  };
}
