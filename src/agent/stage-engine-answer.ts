/**
 * An engine's refusal on the agent's routes as the status it means (docs/engine.md): a step past
 * what the engine holds of its session is the digest engine's 409 `UnknownSession` (send it fresh
 * with its replay), a KV cache that cannot make room is a 503 `Full` to retry later, input the
 * engine cannot run is a 400. Read by the error's literal `code`, whatever the engine's error class.
 */
import { ServeError } from '../wire/serve-error.js';

/** The {@link ServeError} for an engine error it knows; anything else unchanged (a 500). */
export function stageEngineAnswer(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'SessionNotHeld') return new ServeError('UnknownSession', 409, message, { field: 'sessionId' });
  if (code === 'KvMemoryExhausted') return new ServeError('Full', 503, message, { retryAfterMs: 1000 });
  if (code === 'ContextExceeded' || code === 'InvalidInput') return new ServeError('InvalidRequest', 400, message, { field: 'input' });
  return error;
}
