/**
 * Whose an idempotency key is (docs/serve.md, "Idempotent generation"): a key is kept under its
 * caller's credential, so one caller can neither probe, squat nor read another's key. A caller
 * with a bearer token (the client token, a class's) keys under a hash of it; a caller without one
 * keys under its connection's source address: a retry from another address is another key.
 */
import { createHash } from 'node:crypto';

/** What scopes a key: the request's `authorization` header and its connection's source address. */
export interface KeyCaller {
  readonly authorization: string | undefined;
  readonly address: string | undefined;
  /** The caller's client class, when classes are configured: a key is its class's too. */
  readonly className?: string;
}

/** The key `given` as the store keeps it for `caller`: `<scope>/<class>/<given>`. */
export function scopedKey(given: string, caller: KeyCaller): string {
  const token = /^Bearer (\S+)$/i.exec(caller.authorization ?? '')?.[1];
  const scope = token !== undefined ? `t-${createHash('sha256').update(token).digest('hex').slice(0, 32)}` : `a-${(caller.address ?? 'unknown').replace(/^::ffff:/, '')}`;
  return `${scope}/${caller.className ?? ''}/${given}`;
}
