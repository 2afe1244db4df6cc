/**
 * The swarm secret's signature on what replicas tell each other through NATS (docs/security.md,
 * "NATS"): log entries, KV snapshots, heartbeats, progress announcements and agent directory
 * entries each carry `sig`, a hex HMAC-SHA256 keyed with the swarm secret of
 * `hecate-nats-v1\n<kind>\n<swarm>\n<canonical JSON of the value without sig>`. The kind and the
 * swarm's name are inside, so a signed heartbeat is no entry and an entry of one swarm is none of
 * another's. A plain client of the NATS server, without the secret, can publish, but not sign.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** What a signature is of. */
export type SignedKind = 'entry' | 'snapshot' | 'heartbeat' | 'progress' | 'directory' | 'checkpoint' | 'load';

/**
 * JSON with every object's keys sorted (arrays in order; `undefined` members left out as
 * `JSON.stringify` does): the same bytes for the same value, however its keys were ordered.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const keys = Object.keys(value).sort();
  const parts: string[] = [];
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined || typeof v === 'function') continue;
    parts.push(`${JSON.stringify(k)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

const HEX_SIG = /^[0-9a-f]{64}$/;

/** Signs and verifies one swarm's values with its secret. */
export class LogSigner {
  private readonly key: Buffer;

  /**
   * @param secret the swarm secret (the token file's text, or its bytes)
   * @param swarm the swarm's name, signed into every value
   */
  constructor(
    secret: Uint8Array | string,
    readonly swarm: string,
  ) {
    this.key = Buffer.from(typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret);
  }

  /** The signature of `value` (its `sig`, if any, left out). */
  sign(kind: SignedKind, value: object): string {
    const { sig: _sig, ...body } = value as Record<string, unknown>;
    return createHmac('sha256', this.key).update(`hecate-nats-v1\n${kind}\n${this.swarm}\n${canonicalJson(body)}`).digest('hex');
  }

  /** `value` with its signature. */
  signed<T extends object>(kind: SignedKind, value: T): T & { readonly sig: string } {
    return { ...value, sig: this.sign(kind, value) };
  }

  /** Whether `value` carries a `sig` that is this secret's signature of the rest of it (constant-time compare). */
  verify(kind: SignedKind, value: unknown): boolean {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const sig = (value as { sig?: unknown }).sig;
    if (typeof sig !== 'string' || !HEX_SIG.test(sig)) return false;
    return timingSafeEqual(Buffer.from(sig, 'hex'), Buffer.from(this.sign(kind, value), 'hex'));
  }
}
