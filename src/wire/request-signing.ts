/**
 * Requests signed with the swarm secret (docs/security.md, "Signed requests"; wire protocol 2,
 * docs/engine.md, "Signing"): HMAC-SHA256 over the receiver's id (the audience), the method, the
 * path (with its query), a timestamp, a nonce and the body's SHA-256, sent as four headers. The
 * receiver checks the audience is its own, the signature in constant time, the timestamp within a
 * bounded window (not before the receiver started, when it keeps no nonces across a restart), and
 * the nonce against the ones it already accepted.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { NonceCache } from './nonce-cache.js';

/** The headers of a signed request. */
export const SIGNATURE_HEADERS = Object.freeze({ audience: 'x-hecate-audience', timestamp: 'x-hecate-timestamp', nonce: 'x-hecate-nonce', signature: 'x-hecate-signature' });

/** The version of what is signed (docs/engine.md, "Signing"): 2 binds each request to its receiver. */
export const SIGNING_PROTOCOL = 2;

/** Default largest difference between a request's timestamp and the receiver's clock. */
export const DEFAULT_MAX_SKEW_MS = 30_000;

/** An audience as sent: letters, digits and `._:/-`, at most 220 characters. */
const AUDIENCE = /^[A-Za-z0-9._:/-]{1,220}$/;

/** The audience of agent `id`'s stage server: what the orchestrator signs its calls to it for. */
export function agentAudience(id: string): string {
  return `agent/${id}`;
}

/** What a signature covers. */
export interface SignedParts {
  /** The receiver it is meant for ({@link agentAudience}, or a swarm's orchestrators: orchestrator-guard.ts). */
  readonly audience: string;
  readonly method: string;
  /** The request's path and query, as sent (`/v1/stage`, `/v1/nodes/a1/heartbeat`). */
  readonly path: string;
  readonly timestamp: number;
  readonly nonce: string;
  /** The body's bytes as sent ('' for none). */
  readonly body: string | Uint8Array;
}

/** SHA-256 of `body`, hex. */
export function bodyHash(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/** The text a request's signatures cover (the agent's key signs it too, with its id: agent-key.ts). */
export function canonicalText(parts: SignedParts): string {
  return `${parts.audience}\n${parts.method.toUpperCase()}\n${parts.path}\n${parts.timestamp}\n${parts.nonce}\n${bodyHash(parts.body)}`;
}

/** A fresh nonce: 16 random bytes, hex. */
export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

/** HMAC-SHA256 of the request's canonical text under `secret`, hex. */
export function hmacOf(secret: Uint8Array, parts: SignedParts): string {
  return createHmac('sha256', secret).update(`hecate-hmac-v2\n${canonicalText(parts)}`).digest('hex');
}

/** The four signature headers of a request to send. */
export function signatureHeaders(secret: Uint8Array, parts: SignedParts): Record<string, string> {
  return { [SIGNATURE_HEADERS.audience]: parts.audience, [SIGNATURE_HEADERS.timestamp]: String(parts.timestamp), [SIGNATURE_HEADERS.nonce]: parts.nonce, [SIGNATURE_HEADERS.signature]: hmacOf(secret, parts) };
}

/** True when `a` and `b` are the same text, compared in time independent of where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  // Compare equal lengths only (timingSafeEqual throws otherwise); a length mismatch still costs a compare.
  const equal = timingSafeEqual(x.length === y.length ? x : y, y);
  return equal && x.length === y.length;
}

/** A received request's method, path, headers and raw body. */
export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string | Uint8Array;
}

/** The outcome of checking a request's signature: accepted with its parts, or why not. */
export type Verdict = { readonly ok: true; readonly parts: SignedParts } | { readonly ok: false; readonly reason: string };

const header = (headers: ReceivedRequest['headers'], name: string): string | undefined => {
  const v = headers[name];
  return typeof v === 'string' ? v : undefined;
};

/** Who a receiver is and which timestamps it takes (docs/security.md, "Signed requests"). */
export interface SignatureWindow {
  /** The receiver's own audience: a request signed for another is refused. */
  readonly audience: string;
  /** How far behind this host's clock a timestamp may be. @defaultValue 30000 */
  readonly maxSkewMs?: number;
  /** How far ahead of it. @defaultValue maxSkewMs */
  readonly maxAheadMs?: number;
  /**
   * Timestamps before this are refused (a receiver that forgets its nonces when it restarts: its
   * start plus `maxAheadMs`, so nothing it took before the restart is taken again). @defaultValue none
   */
  readonly notBefore?: number;
}

/**
 * What of a signed request its headers alone can show, checked before its body is read: all four
 * headers present and well formed, the audience the receiver's, the timestamp within its window
 * of `now`, the nonce not used.
 * @returns undefined when they hold, else why not
 */
export function checkSignatureHeaders(headers: ReceivedRequest['headers'], now: number, nonces: NonceCache, window: SignatureWindow): string | undefined {
  const audience = header(headers, SIGNATURE_HEADERS.audience);
  const stamp = header(headers, SIGNATURE_HEADERS.timestamp);
  const nonce = header(headers, SIGNATURE_HEADERS.nonce);
  const signature = header(headers, SIGNATURE_HEADERS.signature);
  if (audience === undefined || stamp === undefined || nonce === undefined || signature === undefined) return `not signed with the swarm secret for this receiver (headers ${Object.values(SIGNATURE_HEADERS).join(', ')} needed: wire protocol ${SIGNING_PROTOCOL})`;
  if (!AUDIENCE.test(audience)) return `header ${SIGNATURE_HEADERS.audience}: expected 1-220 of letters, digits and ._:/-`;
  if (audience !== window.audience) return `header ${SIGNATURE_HEADERS.audience}: signed for "${audience}", not for this receiver ("${window.audience}"): a request meant for another`;
  if (!/^\d{1,16}$/.test(stamp)) return `header ${SIGNATURE_HEADERS.timestamp}: expected milliseconds since 1970, got "${stamp.slice(0, 40)}"`;
  if (!/^[0-9a-f]{16,64}$/.test(nonce)) return `header ${SIGNATURE_HEADERS.nonce}: expected 16-64 hex digits`;
  const at = Number(stamp);
  const behind = window.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
  const ahead = window.maxAheadMs ?? behind;
  if (now - at > behind) return `header ${SIGNATURE_HEADERS.timestamp}: ${now - at} ms behind this host's clock (at most ${behind} ms)`;
  if (at - now > ahead) return `header ${SIGNATURE_HEADERS.timestamp}: ${at - now} ms ahead of this host's clock (at most ${ahead} ms)`;
  if (window.notBefore !== undefined && at < window.notBefore) return `header ${SIGNATURE_HEADERS.timestamp}: signed ${window.notBefore - at} ms before this receiver takes requests (it started since: a request captured before a restart)`;
  if (nonces.has(nonce, now)) return `header ${SIGNATURE_HEADERS.nonce}: already used (a replayed request)`;
  return undefined;
}

/**
 * Checks a request signed with {@link signatureHeaders}: its headers as {@link checkSignatureHeaders}
 * does, the signature right (constant time), then the nonce recorded as used.
 */
export function verifySignature(secret: Uint8Array, request: ReceivedRequest, now: number, nonces: NonceCache, window: SignatureWindow): Verdict {
  const refused = checkSignatureHeaders(request.headers, now, nonces, window);
  if (refused !== undefined) return { ok: false, reason: refused };
  const nonce = header(request.headers, SIGNATURE_HEADERS.nonce) as string;
  const signature = header(request.headers, SIGNATURE_HEADERS.signature) as string;
  const parts: SignedParts = { audience: window.audience, method: request.method, path: request.path, timestamp: Number(header(request.headers, SIGNATURE_HEADERS.timestamp)), nonce, body: request.body };
  if (!sameSecret(hmacOf(secret, parts), signature.toLowerCase())) return { ok: false, reason: `header ${SIGNATURE_HEADERS.signature}: the signature does not match (another swarm secret, route or body?)` };
  const admitted = nonces.admit(nonce, now);
  if (admitted === 'replayed') return { ok: false, reason: `header ${SIGNATURE_HEADERS.nonce}: already used (a replayed request)` };
  if (admitted === 'full') return { ok: false, reason: `too many signed requests within ${window.maxSkewMs ?? DEFAULT_MAX_SKEW_MS} ms` };
  return { ok: true, parts };
}

/** The headers of a signed reply (the request's nonce is not repeated: the reply is bound to it). */
export const REPLY_SIGNATURE_HEADERS = Object.freeze({ timestamp: 'x-hecate-reply-timestamp', signature: 'x-hecate-reply-signature' });

/** What a reply's signature covers: the request it answers (audience, method, path, nonce), when it was sent, its body. */
export interface ReplyParts {
  /** The audience of the request it answers: the replier's own. */
  readonly audience: string;
  readonly method: string;
  readonly path: string;
  /** The nonce of the request it answers. */
  readonly nonce: string;
  readonly timestamp: number;
  readonly body: string | Uint8Array;
}

/** HMAC-SHA256 of a reply under `secret`, hex: a domain apart from any request's (`hecate-reply-v2`). */
export function replyHmacOf(secret: Uint8Array, parts: ReplyParts): string {
  return createHmac('sha256', secret).update(`hecate-reply-v2\n${canonicalText(parts)}`).digest('hex');
}

/** The headers of a reply signed with the swarm secret. */
export function replySignatureHeaders(secret: Uint8Array, parts: ReplyParts): Record<string, string> {
  return { [REPLY_SIGNATURE_HEADERS.timestamp]: String(parts.timestamp), [REPLY_SIGNATURE_HEADERS.signature]: replyHmacOf(secret, parts) };
}

/**
 * Checks a reply signed with {@link replySignatureHeaders} against the request it answers: both
 * headers present, the signature right (constant time), the timestamp within `maxSkewMs` of `now`.
 * No nonce cache is needed: the request's nonce was used once, and the reply is bound to it.
 * @returns undefined when it holds, else why not
 */
export function checkReplySignature(secret: Uint8Array, request: { readonly audience: string; readonly method: string; readonly path: string; readonly nonce: string }, headers: { get(name: string): string | null | undefined }, body: Uint8Array, now: number, maxSkewMs = DEFAULT_MAX_SKEW_MS): string | undefined {
  const stamp = headers.get(REPLY_SIGNATURE_HEADERS.timestamp) ?? undefined;
  const signature = headers.get(REPLY_SIGNATURE_HEADERS.signature) ?? undefined;
  if (stamp === undefined || signature === undefined) return `the reply is not signed with the swarm secret (headers ${Object.values(REPLY_SIGNATURE_HEADERS).join(', ')} needed)`;
  if (!/^\d{1,16}$/.test(stamp)) return `header ${REPLY_SIGNATURE_HEADERS.timestamp}: expected milliseconds since 1970, got "${stamp.slice(0, 40)}"`;
  const parts: ReplyParts = { ...request, timestamp: Number(stamp), body };
  if (!sameSecret(replyHmacOf(secret, parts), signature.toLowerCase())) return `header ${REPLY_SIGNATURE_HEADERS.signature}: the reply's signature does not match (another swarm secret, or not the reply to this request)`;
  const skew = Math.abs(now - parts.timestamp);
  if (skew > maxSkewMs) return `header ${REPLY_SIGNATURE_HEADERS.timestamp}: ${skew} ms away from this host's clock (at most ${maxSkewMs} ms)`;
  return undefined;
}
