/**
 * The idempotency key of `POST /v1/generate`: the `Idempotency-Key` header or the body's
 * `idempotencyKey` (docs/serve.md, "Idempotent generation"). 1–128 characters of letters, digits,
 * `.`, `_`, `:`, `-`; both given must agree.
 */
import { IdempotencyError } from './idempotency-error.js';

/** The longest key. */
export const MAX_IDEMPOTENCY_KEY = 128;

const KEY = /^[A-Za-z0-9._:-]+$/;

/**
 * The request's key, or undefined when it carries none.
 * @throws {IdempotencyError} `InvalidKey` naming the header or the field: a bad key, two that differ.
 */
export function idempotencyKeyOf(header: unknown, field: unknown): string | undefined {
  const fromHeader = checkKey(header, 'Idempotency-Key header');
  const fromBody = checkKey(field, 'idempotencyKey');
  if (fromHeader !== undefined && fromBody !== undefined && fromHeader !== fromBody) {
    throw new IdempotencyError('InvalidKey', `the Idempotency-Key header "${fromHeader}" and the body's idempotencyKey "${fromBody}" differ; send one`);
  }
  return fromHeader ?? fromBody;
}

function checkKey(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new IdempotencyError('InvalidKey', `${where}: given ${value.length} times; send it once`);
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY || !KEY.test(value)) {
    const shown = typeof value === 'string' ? `"${value.slice(0, 40)}${value.length > 40 ? '…' : ''}" (${value.length} characters)` : typeof value;
    throw new IdempotencyError('InvalidKey', `${where}: must be 1-${MAX_IDEMPOTENCY_KEY} letters, digits, ".", "_", ":" or "-", got ${shown}`);
  }
  return value;
}
