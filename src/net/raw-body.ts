/**
 * Keeps each JSON request's body text as received, beside fastify's parse of it: a signature covers
 * the bytes sent, not a re-serialisation of the parsed value.
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

/** The body `request` arrived with ('' for none). */
export function rawBody(request: FastifyRequest): string {
  return bodies.get(request.raw) ?? '';
}
