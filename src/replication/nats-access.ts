/**
 * How a replica reaches a NATS server that asks for credentials and TLS (docs/security.md, "NATS"):
 * a user and password, a token, an NKey seed file or a creds file (JWT and seed), and the CA,
 * certificate and key of a TLS connection. Every connection of a replicated swarm (the replica's,
 * the agent directory's) is opened here, so a refusal reads the same everywhere: a
 * `ReplicationError` `Refused` naming what the server wanted.
 */
import { readFileSync } from 'node:fs';
import type { NatsConnection, NodeConnectionOptions } from '@nats-io/transport-node';
import { ReplicationError } from './replication-error.js';

/** Credentials and TLS of the NATS connections (all optional: a server without auth needs none). */
export interface NatsAccess {
  /** User name, with `pass`. */
  readonly user?: string;
  readonly pass?: string;
  /** An authorization token (not with `user`). */
  readonly token?: string;
  /** A creds file (`nsc generate creds`: a user JWT and its NKey seed). */
  readonly credsFile?: string;
  /** A file holding an NKey user seed (`SU…`), for a server configured with that user's public NKey. */
  readonly nkeyFile?: string;
  /** TLS: the CA to trust (PEM file), and a client certificate and key (PEM files) when the server verifies clients. */
  readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string };
}

const text = (v: unknown): boolean => typeof v === 'string' && v.length > 0;

/** What is wrong with `access` (the option named `nats`), or undefined. */
export function natsAccessIssue(access: NatsAccess | undefined): string | undefined {
  if (access === undefined) return undefined;
  if (access === null || typeof access !== 'object') return 'option "nats" must be an object { user?, pass?, token?, credsFile?, nkeyFile?, tls? }';
  const known = new Set(['user', 'pass', 'token', 'credsFile', 'nkeyFile', 'tls']);
  const unknown = Object.keys(access).find((k) => !known.has(k));
  if (unknown !== undefined) return `option "nats.${unknown}" is not known (user, pass, token, credsFile, nkeyFile, tls)`;
  for (const k of ['user', 'pass', 'token', 'credsFile', 'nkeyFile'] as const) {
    if (access[k] !== undefined && !text(access[k])) return `option "nats.${k}" must be a non-empty string`;
  }
  if ((access.user === undefined) !== (access.pass === undefined)) return 'options "nats.user" and "nats.pass" go together';
  const ways = [access.user !== undefined, access.token !== undefined, access.credsFile !== undefined, access.nkeyFile !== undefined].filter(Boolean).length;
  if (ways > 1) return 'option "nats": give one of user and pass, token, credsFile or nkeyFile';
  const tls = access.tls;
  if (tls !== undefined) {
    if (tls === null || typeof tls !== 'object') return 'option "nats.tls" must be an object { ca?, cert?, key? } of PEM file paths';
    for (const k of Object.keys(tls)) if (!['ca', 'cert', 'key'].includes(k)) return `option "nats.tls.${k}" is not known (ca, cert, key)`;
    for (const k of ['ca', 'cert', 'key'] as const) if (tls[k] !== undefined && !text(tls[k])) return `option "nats.tls.${k}" must be a file path`;
    if ((tls.cert === undefined) !== (tls.key === undefined)) return 'options "nats.tls.cert" and "nats.tls.key" go together';
  }
  return undefined;
}

function readFile(path: string, option: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ReplicationError('InvalidInput', `option "${option}": cannot read ${path} (${String((error as { code?: unknown }).code ?? error)})`, { cause: error });
  }
}

/** The connection options `access` adds (authenticators read from their files now). */
async function accessOptions(access: NatsAccess | undefined): Promise<NodeConnectionOptions> {
  if (access === undefined) return {};
  const { credsAuthenticator, nkeyAuthenticator } = await import('@nats-io/transport-node');
  const out: NodeConnectionOptions = {};
  if (access.user !== undefined) Object.assign(out, { user: access.user, pass: access.pass });
  if (access.token !== undefined) out.token = access.token;
  if (access.credsFile !== undefined) out.authenticator = credsAuthenticator(readFile(access.credsFile, 'nats.credsFile'));
  if (access.nkeyFile !== undefined) {
    const seed = new TextDecoder().decode(readFile(access.nkeyFile, 'nats.nkeyFile')).trim();
    out.authenticator = nkeyAuthenticator(new TextEncoder().encode(seed));
  }
  const tls = access.tls;
  if (tls !== undefined) {
    // Files read now: a missing one is named here, not deep in a handshake.
    out.tls = {
      ...(tls.ca !== undefined ? { ca: new TextDecoder().decode(readFile(tls.ca, 'nats.tls.ca')) } : {}),
      ...(tls.cert !== undefined ? { cert: new TextDecoder().decode(readFile(tls.cert, 'nats.tls.cert')) } : {}),
      ...(tls.key !== undefined ? { key: new TextDecoder().decode(readFile(tls.key, 'nats.tls.key')) } : {}),
    };
  }
  return out;
}

/** Errors of a server that would not let this client in: its credentials, or TLS. */
function refusal(error: unknown, servers: readonly string[]): ReplicationError | undefined {
  const e = error as { name?: unknown; message?: unknown; code?: unknown; cause?: { message?: unknown; code?: unknown } } | null;
  const message = String(e?.message ?? error);
  const all = `${message} ${String(e?.cause?.message ?? '')} ${String(e?.code ?? '')} ${String(e?.cause?.code ?? '')}`;
  const where = servers.join(',');
  if (e?.name === 'AuthorizationError' || /authorization|authentication|user.*expired|permissions/i.test(all)) {
    return new ReplicationError('Refused', `NATS server ${where} refused the connection: ${message}; give it the credentials it asks for (user and password, token, creds or NKey file)`, { cause: error });
  }
  if (/tls|ssl|certificate|self.signed|CERT_|UNABLE_TO_VERIFY|handshake/i.test(all)) {
    return new ReplicationError('Refused', `NATS server ${where}: the TLS connection failed: ${message}; give the CA that signed its certificate (and a client certificate and key if it verifies clients)`, { cause: error });
  }
  return undefined;
}

/**
 * Connects to `servers` with `access`, reconnecting for ever after a drop.
 * @throws {ReplicationError} `Refused` when the server refuses the credentials or the TLS handshake fails, `InvalidInput` for a file that cannot be read; the client's own errors otherwise (a server that cannot be reached)
 */
export async function connectNats(servers: readonly string[], access: NatsAccess | undefined, timeoutMs?: number): Promise<NatsConnection> {
  const { connect } = await import('@nats-io/transport-node');
  const options: NodeConnectionOptions = { servers: [...servers], maxReconnectAttempts: -1, reconnectTimeWait: 250, ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}), ...(await accessOptions(access)) };
  try {
    return await connect(options);
  } catch (error) {
    throw refusal(error, servers) ?? error;
  }
}
