/**
 * The credential and TLS flags of `serve` and `agent` (docs/security.md): the swarm secret's file
 * (created by `serve` when absent, read by agents), an agent's state file (its key pair), the
 * client token, the TLS certificate, key and CA, and `--insecure`.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AuthError } from '../wire/auth-error.js';
import { loadAgentKey, type AgentKey } from '../wire/agent-key.js';
import { KeyBindings } from '../orchestrator/auth/key-bindings.js';
import { ensureSecretFile, readSecretFile } from '../net/secret-file.js';
import { readPemFile, type TlsOptions } from '../net/tls-options.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.js';
import { isLoopbackHost } from './loopback.js';

/** Where the swarm secret is when `--token-file` is not given: under the current directory. */
export const DEFAULT_TOKEN_FILE = join('.hecate', 'swarm-token');

const TLS_FLAGS: Record<string, FlagSpec> = {
  'tls-cert': { type: 'string', value: 'file', description: 'PEM certificate to serve https with (needs --tls-key).' },
  'tls-key': { type: 'string', value: 'file', description: 'PEM private key of --tls-cert.' },
  ca: { type: 'string', value: 'file', description: 'PEM CA certificate(s) to trust, instead of the system\'s, when calling the other processes of the swarm over https.' },
};

/** The credential flags of `serve`. */
export const SERVE_TRUST_FLAGS: Record<string, FlagSpec> = {
  'token-file': { type: 'string', value: 'file', description: `The swarm secret agents sign with; created (mode 0600) when absent (default ${DEFAULT_TOKEN_FILE}).` },
  'bindings-file': { type: 'string', value: 'file', description: 'Where each agent id\'s key binding is kept across restarts (default key-bindings.json beside the token file).' },
  'operator-token-file': { type: 'string', value: 'file', description: 'The operator\'s token: its bearer alone may free an id\'s key (DELETE /v1/nodes/:id/key) and remove members (DELETE /v1/nodes/:id, DELETE /v1/nodes?pattern=); created (mode 0600) when absent; keep it off the agents\' machines (default: none, those calls refused).' },
  'client-token-file': { type: 'string', value: 'file', description: 'POST /v1/generate then needs "authorization: Bearer <its text>"; created (mode 0600) when absent.' },
  ...TLS_FLAGS,
  insecure: { type: 'boolean', description: 'Allow --host other than loopback without TLS.' },
};

/** The credential flags of `agent`. */
export const AGENT_TRUST_FLAGS: Record<string, FlagSpec> = {
  'token-file': { type: 'string', value: 'file', description: `The swarm secret, as serve wrote it (default ${DEFAULT_TOKEN_FILE}; waits up to 60 s for it to appear).` },
  'state-file': { type: 'string', value: 'file', description: 'The agent\'s key pair; created (mode 0600) when absent (default agent-ID.json beside the token file).' },
  ...TLS_FLAGS,
};

/** A credential file problem becomes a UsageError naming the flag. */
function asFlag<T>(flag: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof AuthError) throw new UsageError(`flag --${flag}: ${error.message}`, { cause: error });
    throw error;
  }
}

function tlsFlags(args: ParsedArgs): TlsOptions | undefined {
  const cert = stringFlag(args, 'tls-cert');
  const key = stringFlag(args, 'tls-key');
  const ca = stringFlag(args, 'ca');
  if ((cert === undefined) !== (key === undefined)) throw new UsageError(cert === undefined ? 'flag --tls-key needs --tls-cert FILE' : 'flag --tls-cert needs --tls-key FILE');
  if (cert === undefined && ca === undefined) return undefined;
  const pem = (flag: string, path: string | undefined, what: string): string | undefined => (path === undefined ? undefined : asFlag(flag, () => readPemFile(path, what)));
  const certText = pem('tls-cert', cert, 'TLS certificate');
  const keyText = pem('tls-key', key, 'TLS private key');
  const caText = pem('ca', ca, 'CA certificate');
  return { ...(certText !== undefined ? { cert: certText } : {}), ...(keyText !== undefined ? { key: keyText } : {}), ...(caText !== undefined ? { ca: caText } : {}) };
}

/** What `serve` runs with: the swarm secret (made if absent), the client token, TLS. */
export interface ServeTrust {
  readonly tokenFile: string;
  readonly created: boolean;
  readonly secret: Buffer;
  readonly bindingsFile: string;
  readonly clientToken?: Buffer;
  /** The operator token's file and text, and whether this start created it. */
  readonly operator?: { readonly file: string; readonly token: Buffer; readonly created: boolean };
  readonly tls?: TlsOptions;
}

/**
 * Reads (or creates) `serve`'s credentials, and refuses a non-loopback `host` without TLS unless
 * `--insecure` is given.
 * @throws {UsageError} naming the flag
 */
export function serveTrust(args: ParsedArgs, host: string): ServeTrust {
  const tls = tlsFlags(args);
  if (!isLoopbackHost(host) && tls?.cert === undefined && args.values['insecure'] !== true) {
    throw new UsageError(`flag --host: ${host} is not loopback and there is no TLS; give --tls-cert and --tls-key, or --insecure to serve plain http there`);
  }
  const tokenFile = stringFlag(args, 'token-file') ?? DEFAULT_TOKEN_FILE;
  const { secret, created } = asFlag('token-file', () => ensureSecretFile(tokenFile));
  const bindingsFile = stringFlag(args, 'bindings-file') ?? join(dirname(tokenFile), 'key-bindings.json');
  asFlag('bindings-file', () => new KeyBindings(bindingsFile)); // refused here, before anything starts
  const clientFile = stringFlag(args, 'client-token-file');
  const clientToken = clientFile === undefined ? undefined : asFlag('client-token-file', () => ensureSecretFile(clientFile).secret);
  const operatorFile = stringFlag(args, 'operator-token-file');
  const operator = operatorFile === undefined ? undefined : asFlag('operator-token-file', () => ensureSecretFile(operatorFile));
  if (operator !== undefined && operator.secret.equals(secret)) throw new UsageError(`flag --operator-token-file: ${operatorFile} holds the swarm secret; the operator's token must be its own`);
  return { tokenFile, created, secret, bindingsFile, ...(clientToken !== undefined ? { clientToken } : {}), ...(operator !== undefined && operatorFile !== undefined ? { operator: { file: operatorFile, token: operator.secret, created: operator.created } } : {}), ...(tls !== undefined ? { tls } : {}) };
}

/** What `agent` runs with: the swarm secret, its key pair, TLS. */
export interface AgentTrust {
  readonly secret: Buffer;
  readonly key: AgentKey;
  readonly stateFile: string;
  readonly createdKey: boolean;
  readonly tls?: TlsOptions;
}

/**
 * Reads the agent's credentials: the swarm secret (waiting up to `waitMs` for serve to create it),
 * and its key pair (made if absent).
 * @throws {UsageError} naming the flag
 */
export async function agentTrust(args: ParsedArgs, id: string, say: (line: string) => void, waitMs = 60_000): Promise<AgentTrust> {
  const tls = tlsFlags(args);
  const tokenFile = stringFlag(args, 'token-file') ?? DEFAULT_TOKEN_FILE;
  if (!existsSync(tokenFile)) {
    say(`waiting for the swarm secret in ${tokenFile} (serve creates it; copy it here for another machine)`);
    const until = Date.now() + waitMs;
    // serve links the file into place whole (create-exclusive.ts): once it exists it is complete.
    while (!existsSync(tokenFile) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const secret = asFlag('token-file', () => readSecretFile(tokenFile));
  const stateFile = stringFlag(args, 'state-file') ?? join(dirname(tokenFile), `agent-${id}.json`);
  const { key, created } = asFlag('state-file', () => loadAgentKey(stateFile, id));
  return { secret, key, stateFile, createdKey: created, ...(tls !== undefined ? { tls } : {}) };
}
