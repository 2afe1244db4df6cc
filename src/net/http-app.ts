/**
 * The fastify instance both servers start from: JSON-schema validation whose failures become a
 * 400 naming the field, typed errors mapped to their status, JSON 404s, no logger (the CLI says
 * what it has to say); connections and bodies within bounds (connection-limits.ts, raw-body.ts).
 */
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { errorBody, ServeError, validationField } from '../wire/serve-error.js';
import { BodyBudget } from './bounded-body.js';
import { DEFAULT_CONNECTION_LIMITS, limitConnections, type ConnectionLimits } from './connection-limits.js';
import { readBodiesWithin } from './raw-body.js';

/** A route's body bound unless it sets its own (`bodyLimit`): a client's request with its longest prompt. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * A fastify app with the house's error shape: `{ error: { code, message, field? } }`; over https
 * when `tls` (a PEM certificate and key) is given. `answer` maps another error class to its
 * ServeError (the orchestrator's table of library errors); without it such an error is a 500.
 * `limits` bound its connections and the bodies being received (defaults: DEFAULT_CONNECTION_LIMITS).
 */
export function createHttpApp(tls?: { readonly cert: string; readonly key: string }, answer?: (error: unknown) => unknown, limits: Partial<ConnectionLimits> = {}): FastifyInstance {
  const bounds = { ...DEFAULT_CONNECTION_LIMITS, ...limits };
  const timeouts = { headersTimeout: bounds.headersTimeoutMs, requestTimeout: bounds.requestTimeoutMs, connectionsCheckingInterval: bounds.checkIntervalMs };
  // Keep-alive sockets of a dead peer must not hold close() open.
  const app = Fastify({
    ...(tls !== undefined ? { https: { cert: tls.cert, key: tls.key, ...timeouts } } : { http: timeouts }),
    requestTimeout: bounds.requestTimeoutMs,
    keepAliveTimeout: bounds.keepAliveTimeoutMs,
    maxRequestsPerSocket: bounds.maxRequestsPerSocket,
    logger: false,
    forceCloseConnections: true,
    bodyLimit: DEFAULT_BODY_LIMIT,
    // Refuse what the schema does not allow instead of quietly fixing it: no coercion, no stripping.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
  }) as unknown as FastifyInstance;
  limitConnections(app.server, bounds);
  readBodiesWithin(app, new BodyBudget(bounds.maxBodyBytes));
  app.setErrorHandler((error: FastifyError | ServeError | Error, request, reply) => {
    // Refused before its body was read (or while reading it): the connection is not kept for another request.
    if (!request.raw.complete) void reply.header('connection', 'close');
    if (error instanceof ServeError) {
      if (error.retryAfterMs !== undefined) void reply.header('retry-after', String(retryAfterSeconds(error.retryAfterMs)));
      void reply.status(error.status).send(errorBody(error.code, error.message, error.field));
      return;
    }
    const fe = error as FastifyError;
    if (fe.validation !== undefined) {
      const field = validationField(fe.validation as never);
      void reply.status(400).send(errorBody('InvalidRequest', `${field}: ${fe.validation[0]?.message ?? fe.message}`, field));
      return;
    }
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      // Malformed JSON, a wrong content type, a body too large: the body is at fault.
      void reply.status(fe.statusCode).send(errorBody('InvalidRequest', fe.message, 'body'));
      return;
    }
    const library = answer?.(error); // a library error that reached here: its status from the one table
    if (library instanceof ServeError) {
      if (library.retryAfterMs !== undefined) void reply.header('retry-after', String(retryAfterSeconds(library.retryAfterMs)));
      void reply.status(library.status).send(errorBody(library.code, library.message, library.field));
      return;
    }
    void reply.status(500).send(errorBody('Internal', `${error.name}: ${error.message}`));
  });
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send(errorBody('NotFound', `no route ${request.method} ${request.url}`));
  });
  return app;
}

/** `Retry-After` in whole seconds: rounded up, at least 1 (0 would invite a retry storm). */
export function retryAfterSeconds(ms: number): number {
  return Number.isFinite(ms) ? Math.max(1, Math.ceil(ms / 1000)) : 1;
}

/** Starts listening; resolves with the base URL (`http://127.0.0.1:PORT`, `https://` when the app serves TLS). */
export async function listen(app: FastifyInstance, host: string, port: number): Promise<string> {
  const scheme = app.initialConfig.https !== undefined && app.initialConfig.https !== null ? 'https' : 'http';
  await app.listen({ host, port });
  const address = app.server.address();
  const actual = typeof address === 'object' && address !== null ? address.port : port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return `${scheme}://${shown}:${actual}`;
}
