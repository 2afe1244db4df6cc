/**
 * TLS of `serve` and `agent` (docs/security.md, "TLS"): the certificate and key a server presents,
 * and the CA its clients trust (the orchestrator calling agents, an agent calling the
 * orchestrator), read from PEM files.
 */
import { readFileSync } from 'node:fs';
import { AuthError } from './auth/auth-error.js';

/** The PEM texts of a process's TLS: `cert` and `key` to serve over https, `ca` to trust as a client. */
export interface TlsOptions {
  readonly cert?: string;
  readonly key?: string;
  /** Certificates trusted when calling other processes of the swarm (besides the system's). */
  readonly ca?: string;
}

/** What the server presents, when both a certificate and its key are given. */
export function serverTls(tls: TlsOptions | undefined): { readonly cert: string; readonly key: string } | undefined {
  return tls?.cert !== undefined && tls.key !== undefined ? { cert: tls.cert, key: tls.key } : undefined;
}

/**
 * Reads the PEM files of `--tls-cert`, `--tls-key` and `--ca`.
 * @throws {AuthError} `SecretFile` naming the file that cannot be read or holds no PEM block
 */
export function readTlsFiles(files: { readonly cert?: string; readonly key?: string; readonly ca?: string }): TlsOptions {
  const read = (path: string | undefined, what: string): string | undefined => {
    if (path === undefined) return undefined;
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new AuthError('SecretFile', `${path}: cannot read the ${what} (${String((error as { code?: unknown }).code ?? error)})`, { cause: error });
    }
    if (!/-----BEGIN [A-Z ]+-----/.test(text)) throw new AuthError('SecretFile', `${path}: the ${what} is not PEM (no -----BEGIN ...----- line)`);
    return text;
  };
  const cert = read(files.cert, 'TLS certificate');
  const key = read(files.key, 'TLS private key');
  const ca = read(files.ca, 'CA certificate');
  return { ...(cert !== undefined ? { cert } : {}), ...(key !== undefined ? { key } : {}), ...(ca !== undefined ? { ca } : {}) };
}
