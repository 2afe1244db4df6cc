/**
 * Client disconnect = cancel (docs/serve.md, "Cancellation"): a signal that aborts when the client
 * of a request goes away before its answer was sent, so the request's session gives up its running
 * stage call and tells the agents to drop its state.
 */
import type { FastifyReply } from 'fastify';
import { SessionError } from '../core/errors.js';

/** Aborts when the connection of `reply` closes before the answer is written (the client hung up). */
export function cancelOnHangUp(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const raw = reply.raw;
  raw.once('close', () => {
    if (!raw.writableFinished) controller.abort(new SessionError('Aborted', 'the client went away before the answer'));
  });
  return controller.signal;
}
