/**
 * Requests signed with the swarm secret (docs/security.md, "Signed requests"): HMAC-SHA256 over the
 * method, the path (with its query), a timestamp, a nonce and the body's SHA-256, sent as three
 * headers. The receiver checks the signature in constant time, the timestamp within a bounded
 * skew, and the nonce against the ones it already accepted.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { NonceCache } from './nonce-cache.js';

/** The headers of a signed request. */
export const SIGNATURE_HEADERS = Object.freeze({ timestamp: 'x-hecate-timestamp', nonce: 'x-hecate-nonce', signature: 'x-hecate-signature' });

/** Default largest difference between a request's timestamp and the receiver's clock. */
export const DEFAULT_MAX_SKEW_MS = 30_000;

/** What a signature covers. */
export interface SignedParts {
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
  return `${parts.method.toUpperCase()}\n${parts.path}\n${parts.timestamp}\n${parts.nonce}\n${bodyHash(parts.body)}`;
}

/** A fresh nonce: 16 random bytes, hex. */
export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

/** HMAC-SHA256 of the request's canonical text under `secret`, hex. */
export function hmacOf(secret: Uint8Array, parts: SignedParts): string {
  return createHmac('sha256', secret).update(`hecate-hmac-v1\n${canonicalText(parts)}`).digest('hex');
}

/** The three signature headers of a request to send. */
export function signatureHeaders(secret: Uint8Array, parts: SignedParts): Record<string, string> {
  return { [SIGNATURE_HEADERS.timestamp]: String(parts.timestamp), [SIGNATURE_HEADERS.nonce]: parts.nonce, [SIGNATURE_HEADERS.signature]: hmacOf(secret, parts) };
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

/**
 * What of a signed request its headers alone can show, checked before its body is read: all three
 * headers present and well formed, the timestamp within `maxSkewMs` of `now`, the nonce not used.
 * @returns undefined when they hold, else why not
 */
export function checkSignatureHeaders(headers: ReceivedRequest['headers'], now: number, nonces: NonceCache, maxSkewMs = DEFAULT_MAX_SKEW_MS): string | undefined {
  const stamp = header(headers, SIGNATURE_HEADERS.timestamp);
  const nonce = header(headers, SIGNATURE_HEADERS.nonce);
  const signature = header(headers, SIGNATURE_HEADERS.signature);
  if (stamp === undefined || nonce === undefined || signature === undefined) return `not signed with the swarm secret (headers ${Object.values(SIGNATURE_HEADERS).join(', ')} needed)`;
  if (!/^\d{1,16}$/.test(stamp)) return `header ${SIGNATURE_HEADERS.timestamp}: expected milliseconds since 1970, got "${stamp.slice(0, 40)}"`;
  if (!/^[0-9a-f]{16,64}$/.test(nonce)) return `header ${SIGNATURE_HEADERS.nonce}: expected 16-64 hex digits`;
  const skew = Math.abs(now - Number(stamp));
  if (skew > maxSkewMs) return `header ${SIGNATURE_HEADERS.timestamp}: ${skew} ms away from this host's clock (at most ${maxSkewMs} ms)`;
  if (nonces.has(nonce, now)) return `header ${SIGNATURE_HEADERS.nonce}: already used (a replayed request)`;
  return undefined;
}

/**
 * Checks a request signed with {@link signatureHeaders}: its headers as {@link checkSignatureHeaders}
 * does, the signature right (constant time), then the nonce recorded as used.
 */
export function verifySignature(secret: Uint8Array, request: ReceivedRequest, now: number, nonces: NonceCache, maxSkewMs = DEFAULT_MAX_SKEW_MS): Verdict {
  const refused = checkSignatureHeaders(request.headers, now, nonces, maxSkewMs);
  if (refused !== undefined) return { ok: false, reason: refused };
  const nonce = header(request.headers, SIGNATURE_HEADERS.nonce) as string;
  const signature = header(request.headers, SIGNATURE_HEADERS.signature) as string;
  const parts: SignedParts = { method: request.method, path: request.path, timestamp: Number(header(request.headers, SIGNATURE_HEADERS.timestamp)), nonce, body: request.body };
  if (!sameSecret(hmacOf(secret, parts), signature.toLowerCase())) return { ok: false, reason: `header ${SIGNATURE_HEADERS.signature}: the signature does not match (another swarm secret?)` };
  const admitted = nonces.admit(nonce, now);
  if (admitted === 'replayed') return { ok: false, reason: `header ${SIGNATURE_HEADERS.nonce}: already used (a replayed request)` };
  if (admitted === 'full') return { ok: false, reason: `too many signed requests within ${maxSkewMs} ms` };
  return { ok: true, parts };
}

/** The headers of a signed reply (the request's nonce is not repeated: the reply is bound to it). */
export const REPLY_SIGNATURE_HEADERS = Object.freeze({ timestamp: 'x-hecate-reply-timestamp', signature: 'x-hecate-reply-signature' });

/** What a reply's signature covers: the request it answers (method, path, nonce), when it was sent, its body. */
export interface ReplyParts {
  readonly method: string;
  readonly path: string;
  /** The nonce of the request it answers. */
  readonly nonce: string;
  readonly timestamp: number;
  readonly body: string | Uint8Array;
}

/** HMAC-SHA256 of a reply under `secret`, hex: a domain apart from any request's (`hecate-reply-v1`). */
export function replyHmacOf(secret: Uint8Array, parts: ReplyParts): string {
  return createHmac('sha256', secret).update(`hecate-reply-v1\n${canonicalText(parts)}`).digest('hex');
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
export function checkReplySignature(secret: Uint8Array, request: { readonly method: string; readonly path: string; readonly nonce: string }, headers: { get(name: string): string | null | undefined }, body: Uint8Array, now: number, maxSkewMs = DEFAULT_MAX_SKEW_MS): string | undefined {
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
