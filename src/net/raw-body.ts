/**
 * Keeps each request's body as received, beside fastify's parse of it: a signature covers the
 * bytes sent, not a re-serialisation of the parsed value. A binary body (a stage message) is its
 * own raw body.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

const bodies = new WeakMap<object, string>();

/** Replaces the app's JSON parser by one that also keeps the text (same parsing, same poisoning checks). */
export function keepRawBody(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    bodies.set(request.raw, body as string);
    parse(request, body as string, done);
  });
}

/** The body `request` arrived with ('' for none): its bytes when it was parsed as a buffer. */
export function rawBody(request: FastifyRequest): string | Uint8Array {
  if (request.body instanceof Uint8Array) return request.body;
  return bodies.get(request.raw) ?? '';
}
