/**
 * TLS of `serve` and `agent` (docs/security.md, "TLS"): the certificate and key a server presents,
 * and the CA its clients trust (the orchestrator calling agents, an agent calling the
 * orchestrator), read from PEM files.
 */
import { readFileSync } from 'node:fs';
import { AuthError } from '../wire/auth-error.js';

/** The PEM texts of a process's TLS: `cert` and `key` to serve over https, `ca` to trust as a client. */
export interface TlsOptions {
  readonly cert?: string;
  readonly key?: string;
  /** Certificates trusted when calling other processes of the swarm over https (instead of the system's). */
  readonly ca?: string;
}

/** What the server presents, when both a certificate and its key are given. */
export function serverTls(tls: TlsOptions | undefined): { readonly cert: string; readonly key: string } | undefined {
  return tls?.cert !== undefined && tls.key !== undefined ? { cert: tls.cert, key: tls.key } : undefined;
}

/**
 * Reads one PEM file (`what` names it in the message: "TLS certificate", "CA certificate").
 * @throws {AuthError} `TlsFile` naming the file when it cannot be read or holds no PEM block
 */
export function readPemFile(path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new AuthError('TlsFile', `${path}: cannot read the ${what} (${String((error as { code?: unknown }).code ?? error)})`, { cause: error });
  }
  if (!/-----BEGIN [A-Z ]+-----/.test(text)) throw new AuthError('TlsFile', `${path}: the ${what} is not PEM (no -----BEGIN ...----- line)`);
  return text;
}
