/**
 * `--nats URL --swarm NAME` of `hecate-node serve`: several orchestrators on one swarm
 * (docs/serve.md, "Several orchestrators"). Checked here so a bad value is a one-line exit 2
 * before anything connects.
 */
import { readPrivateText } from '../net/secret-file.js';
import type { NatsAccess } from '../replication/nats-access.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.js';

/** The NATS credential and TLS flags of `serve` (docs/security.md, "NATS"). */
export const NATS_ACCESS_FLAGS: Readonly<Record<string, FlagSpec>> = {
  'nats-creds': { type: 'string', value: 'file', description: 'NATS creds file (a user JWT and its NKey seed) to connect with.' },
  'nats-nkey': { type: 'string', value: 'file', description: 'File holding an NKey user seed (SU…) to connect to NATS with.' },
  'nats-user': { type: 'string', value: 'name', description: 'NATS user name (needs --nats-pass-file).' },
  'nats-pass-file': { type: 'string', value: 'file', description: 'File holding the NATS user\'s password (mode 0600).' },
  'nats-token-file': { type: 'string', value: 'file', description: 'File holding a NATS authorization token (mode 0600).' },
  'nats-ca': { type: 'string', value: 'file', description: 'PEM CA to trust for the NATS server\'s TLS certificate.' },
  'nats-cert': { type: 'string', value: 'file', description: 'PEM client certificate for a NATS server that verifies clients (needs --nats-key).' },
  'nats-key': { type: 'string', value: 'file', description: 'PEM private key of --nats-cert.' },
};

/** Where the orchestrator's swarm is replicated: NATS servers and the swarm's name. */
export interface ReplicationFlags {
  /** NATS server URLs (`nats://host:port`), in the order given. */
  readonly servers: readonly string[];
  /** The swarm's name: every orchestrator given the same name serves the same swarm. */
  readonly swarm: string;
  /** Credentials and TLS of the NATS connections, when flags give any. */
  readonly nats?: NatsAccess;
}

/** A password or token file's text, trimmed; refused when others can read it or it is empty. */
function readCredential(args: ParsedArgs, flag: string): string | undefined {
  const path = stringFlag(args, flag);
  if (path === undefined) return undefined;
  const read = readPrivateText(path);
  if ('unreadable' in read) throw new UsageError(`flag --${flag}: cannot read ${path} (${read.unreadable})`, { cause: read.cause });
  if ('open' in read) throw new UsageError(`flag --${flag}: ${path}: ${read.open}`);
  const text = read.text;
  if (text === '') throw new UsageError(`flag --${flag}: ${path} is empty`);
  return text;
}

/**
 * The NATS credential and TLS flags: one way to authenticate at most (a user and password file, a
 * token file, a creds file or an NKey seed file), and a CA, with a client certificate and key or neither.
 * @throws {UsageError} naming the flag
 */
export function natsAccessFlags(args: ParsedArgs): NatsAccess | undefined {
  const user = stringFlag(args, 'nats-user');
  const passGiven = stringFlag(args, 'nats-pass-file') !== undefined;
  if ((user === undefined) !== !passGiven) throw new UsageError(user === undefined ? 'flag --nats-pass-file needs --nats-user NAME' : 'flag --nats-user needs --nats-pass-file FILE (a password is not given on the command line, where ps shows it)');
  const ways = ['nats-user', 'nats-token-file', 'nats-creds', 'nats-nkey'].filter((f) => stringFlag(args, f) !== undefined);
  if (ways.length > 1) throw new UsageError(`flags ${ways.map((f) => `--${f}`).join(', ')}: give one way to authenticate to NATS`);
  const cert = stringFlag(args, 'nats-cert');
  const key = stringFlag(args, 'nats-key');
  if ((cert === undefined) !== (key === undefined)) throw new UsageError(cert === undefined ? 'flag --nats-key needs --nats-cert FILE' : 'flag --nats-cert needs --nats-key FILE');
  const ca = stringFlag(args, 'nats-ca');
  const pass = readCredential(args, 'nats-pass-file');
  const token = readCredential(args, 'nats-token-file');
  const creds = stringFlag(args, 'nats-creds');
  const nkey = stringFlag(args, 'nats-nkey');
  const access: NatsAccess = {
    ...(user !== undefined && pass !== undefined ? { user, pass } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(creds !== undefined ? { credsFile: creds } : {}),
    ...(nkey !== undefined ? { nkeyFile: nkey } : {}),
    ...(ca !== undefined || cert !== undefined ? { tls: { ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined && key !== undefined ? { cert, key } : {}) } } : {}),
  };
  return Object.keys(access).length > 0 ? access : undefined;
}

/** A NATS server: `nats://` or `tls://`, a host (name, IPv4 or [IPv6]) and an optional port. */
const SERVER = /^(nats|tls):\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/;
/** A swarm name is a token of NATS subjects and stream names: no dots, wildcards or spaces. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `--nats` and `--swarm`, both or neither.
 * @returns the servers and the name, or `undefined` when neither flag is given.
 * @throws {UsageError} naming the flag: one given without the other, a URL that is not
 *   `nats://host[:port]` (several separated by commas), a port out of range, a bad name.
 */
export function replicationFlags(args: ParsedArgs): ReplicationFlags | undefined {
  const nats = stringFlag(args, 'nats');
  const swarm = stringFlag(args, 'swarm');
  const given = Object.keys(NATS_ACCESS_FLAGS).find((f) => stringFlag(args, f) !== undefined);
  if (nats === undefined && given !== undefined) throw new UsageError(`flag --${given} needs --nats URL`);
  if (nats === undefined && swarm === undefined) return undefined;
  if (nats === undefined) throw new UsageError('flag --swarm needs --nats URL: the swarm is replicated through a NATS server');
  if (swarm === undefined) throw new UsageError('flag --nats needs --swarm NAME: the name every orchestrator of the swarm shares');
  const servers = nats.split(',').map((s) => s.trim());
  for (const server of servers) {
    const match = SERVER.exec(server);
    if (match === null) throw new UsageError(`flag --nats: expected nats://host[:port] (several separated by commas), got "${server}"`);
    const port = match[3] === undefined ? 4222 : Number(match[3]);
    if (port < 1 || port > 65535) throw new UsageError(`flag --nats: port must be 1-65535, got ${port} in "${server}"`);
  }
  if (!NAME.test(swarm)) throw new UsageError(`flag --swarm: letters, digits, "_" and "-" only, 1-64 of them (it names NATS subjects and a stream), got "${swarm}"`);
  const access = natsAccessFlags(args);
  return { servers, swarm, ...(access !== undefined ? { nats: access } : {}) };
}
