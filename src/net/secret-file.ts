/**
 * The swarm secret's and the client token's files (docs/security.md, "The swarm secret"): 32 random
 * bytes as hex text, created by `serve` with mode 0600 when absent, read by agents. A file others
 * can read is refused: a secret anyone on the machine can read is no secret.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { AuthError } from '../wire/auth-error.js';
import { createExclusive } from '../wire/create-exclusive.js';

/** Shortest secret accepted, in characters of the file's text. */
export const MIN_SECRET_CHARS = 32;

/**
 * Reads the secret in `path` (its text, trimmed).
 * @throws {AuthError} `SecretFile` naming the file when it cannot be read, is readable by group or
 * others, or is shorter than {@link MIN_SECRET_CHARS}
 */
export function readSecretFile(path: string): Buffer {
  const read = readPrivateText(path);
  if ('unreadable' in read) throw new AuthError('SecretFile', `${path}: cannot read the secret (${read.unreadable})`, { cause: read.cause });
  if ('open' in read) throw new AuthError('SecretFile', `${path}: ${read.open}`);
  const text = read.text;
  if (text.length < MIN_SECRET_CHARS) throw new AuthError('SecretFile', `${path}: the secret is ${text.length} characters long; at least ${MIN_SECRET_CHARS} are needed`);
  return Buffer.from(text, 'utf8');
}

/**
 * A private file's text, trimmed (a secret, a password, a token): or why it cannot be read, or
 * that group or others can read it (then it is no secret: the answer says how to fix it).
 */
export function readPrivateText(path: string): { readonly text: string } | { readonly unreadable: string; readonly cause: unknown } | { readonly open: string } {
  let text: string;
  let mode: number;
  try {
    mode = statSync(path).mode;
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    return { unreadable: String((error as { code?: unknown }).code ?? error), cause: error };
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) return { open: `group or others can read it (mode ${(mode & 0o777).toString(8)}); chmod 600 ${path}` };
  return { text };
}

/**
 * Reads the secret in `path`, first creating it (its directory 0700, the file 0600, 32 random
 * bytes as hex) when there is none. Two processes creating it at once agree: the second reads the
 * first one's file.
 * @returns the secret and whether this call created the file
 * @throws {AuthError} `SecretFile` naming the file
 */
export function ensureSecretFile(path: string): { secret: Buffer; created: boolean } {
  let created: boolean;
  try {
    created = createExclusive(path, `${randomBytes(32).toString('hex')}\n`);
  } catch (error) {
    throw new AuthError('SecretFile', `${path}: cannot create the secret (${String((error as { code?: unknown }).code ?? error)})`, { cause: error });
  }
  return { secret: readSecretFile(path), created };
}
