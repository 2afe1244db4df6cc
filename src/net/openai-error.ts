/**
 * Errors of the OpenAI API in OpenAI's shape (docs/openai.md, "Errors"), as `serve` and an
 * `agent --openai` answer them: `{ error: { message, type, param, code } }` with the house's
 * status and `Retry-After`; `code` is the house's code (docs/serve.md, "Every error and its HTTP status"),
 * `model_not_found` for an unknown model.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { retryAfterSeconds } from './http-app.js';
import { ServeError, validationField } from '../wire/serve-error.js';

/** OpenAI's error object. */
export interface OpenAIErrorBody {
  readonly error: { readonly message: string; readonly type: string; readonly param: string | null; readonly code: string | null };
}

/** OpenAI's `type` for a status. */
export function openAIErrorType(status: number): string {
  if (status === 400 || status === 404 || status === 409 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  return 'server_error';
}

/** Any error as the status and OpenAI body to answer with; `answer` turns a program's own errors into `ServeError`s (the orchestrator's one table). */
export function openAIError(error: unknown, answer?: (error: unknown) => unknown): { status: number; body: OpenAIErrorBody; retryAfterMs: number | undefined } {
  const e = error instanceof ServeError ? error : (answer?.(error) ?? error);
  if (e instanceof ServeError) {
    const code = e.status === 404 && e.field === 'model' ? 'model_not_found' : e.code;
    return { status: e.status, body: { error: { message: e.message, type: openAIErrorType(e.status), param: e.field ?? null, code } }, retryAfterMs: e.retryAfterMs ?? (e.status === 429 || e.status === 503 ? 1000 : undefined) };
  }
  const fe = error as FastifyError;
  if (fe.validation !== undefined) {
    const field = validationField(fe.validation as never);
    return { status: 400, body: { error: { message: `${field}: ${fe.message}`, type: 'invalid_request_error', param: field, code: 'InvalidRequest' } }, retryAfterMs: undefined };
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) return { status: fe.statusCode, body: { error: { message: fe.message, type: 'invalid_request_error', param: 'body', code: 'InvalidRequest' } }, retryAfterMs: undefined };
  return { status: 500, body: { error: { message: `${(error as Error).name}: ${(error as Error).message}`, type: 'server_error', param: null, code: 'Internal' } }, retryAfterMs: undefined };
}

/** The error handler of an OpenAI routes' scope, `answer` as {@link openAIError}'s. */
export function openAIErrorHandler(answer?: (error: unknown) => unknown): (error: unknown, request: FastifyRequest, reply: FastifyReply) => void {
  return (error, _request, reply) => {
    const { status, body, retryAfterMs } = openAIError(error, answer);
    if (retryAfterMs !== undefined) void reply.header('retry-after', String(retryAfterSeconds(retryAfterMs)));
    void reply.status(status).send(body);
  };
}
