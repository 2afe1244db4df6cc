/**
 * The body parsers of both servers: each body read within its route's bound and the process's
 * budget (bounded-body.ts), and kept as received beside fastify's parse of it: a signature covers
 * the bytes sent, not a re-serialisation of the parsed value. A binary body (a stage message) is
 * its own raw body. Only JSON and the parsers added here are read: any other content type is
 * refused (415) before its body is.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BodyBudget, readBoundedBody } from './bounded-body.js';

const bodies = new WeakMap<object, string>();
/** The budget of each server (an encapsulated fastify instance shares its root's server). */
const budgets = new WeakMap<object, BodyBudget>();

const budgetOf = (app: FastifyInstance): BodyBudget => {
  const budget = budgets.get(app.server);
  if (budget === undefined) throw new Error('readBodiesWithin(app) was not called on this server');
  return budget;
};

/**
 * Replaces the app's parsers by a JSON one that reads within bounds and keeps the text (same
 * parsing, same poisoning checks); `budget` bounds the bytes of bodies being received at once.
 */
export function readBodiesWithin(app: FastifyInstance, budget: BodyBudget): void {
  budgets.set(app.server, budget);
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', (request, payload, done) => {
    readBoundedBody(request, payload, request.routeOptions.bodyLimit, budget, (error, bytes) => {
      if (error !== null || bytes === undefined) return done(error ?? new Error('no body'), undefined);
      const text = bytes.toString('utf8');
      bodies.set(request.raw, text);
      parse(request, text, done);
    });
  });
}

/** Adds a parser of `contentType` that reads the body within bounds as its bytes (a stage message). */
export function addBinaryParser(app: FastifyInstance, contentType: string): void {
  const budget = budgetOf(app);
  app.addContentTypeParser(contentType, (request, payload, done) => {
    readBoundedBody(request, payload, request.routeOptions.bodyLimit, budget, (error, bytes) => done(error, bytes));
  });
}

/** The body `request` arrived with ('' for none): its bytes when it was parsed as a buffer. */
export function rawBody(request: FastifyRequest): string | Uint8Array {
  if (request.body instanceof Uint8Array) return request.body;
  return bodies.get(request.raw) ?? '';
}
