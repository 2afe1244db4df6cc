/**
 * An agent's own ed25519 key pair (docs/security.md, "Agent keys"), kept in its state file, and
 * the signature it puts on its joins, heartbeats and leaves: over its id and the request's
 * canonical text (audience, method, path, timestamp, nonce, body hash), so the orchestrator can tell the
 * agent that first joined as an id from any other process claiming it.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { AuthError } from './auth-error.js';
import { createExclusive } from './create-exclusive.js';
import { canonicalText, type SignedParts } from './request-signing.js';

/** The headers of an agent's signature. */
export const AGENT_KEY_HEADERS = Object.freeze({ key: 'x-hecate-agent-key', signature: 'x-hecate-agent-signature' });

/** An agent's key pair: the private key, and the public key as sent (base64url of its 32 bytes). */
export interface AgentKey {
  readonly id: string;
  readonly privateKey: KeyObject;
  readonly publicKey: string;
}

/** The JSON of a state file. */
interface StateFileJson {
  readonly id: string;
  readonly publicKey: string;
  /** PKCS#8 DER, base64. */
  readonly privateKey: string;
}

/** The public key of `privateKey` as sent: base64url of the raw 32 bytes. */
function publicKeyText(privateKey: KeyObject): string {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return String(jwk.x);
}

/**
 * The key pair of agent `id` in `path`, made (ed25519, the file 0600) when there is none.
 * @throws {AuthError} `StateFile` naming the file: unreadable, not a state file, readable by others, or another agent's
 */
export function loadAgentKey(path: string, id: string): { key: AgentKey; created: boolean } {
  let created = false;
  if (!existsSync(path)) {
    const { privateKey } = generateKeyPairSync('ed25519');
    const json: StateFileJson = { id, publicKey: publicKeyText(privateKey), privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64') };
    try {
      created = createExclusive(path, `${JSON.stringify(json, null, 2)}\n`);
    } catch (error) {
      throw new AuthError('StateFile', `${path}: cannot create the agent's state file (${String((error as { code?: unknown }).code ?? error)})`, { cause: error });
    }
  }
  return { key: readAgentKey(path, id), created };
}

function readAgentKey(path: string, id: string): AgentKey {
  let json: Partial<StateFileJson>;
  try {
    if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0) throw new AuthError('StateFile', `${path}: group or others can read the agent's private key; chmod 600 ${path}`);
    json = JSON.parse(readFileSync(path, 'utf8')) as Partial<StateFileJson>;
  } catch (error) {
    if (error instanceof AuthError) throw error;
    throw new AuthError('StateFile', `${path}: cannot read the agent's state file (${String((error as { code?: unknown }).code ?? (error as Error).message)})`, { cause: error });
  }
  if (json.id !== id) throw new AuthError('StateFile', `${path}: holds the key of agent "${String(json.id)}", not "${id}"; give each agent its own --state-file`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: Buffer.from(String(json.privateKey), 'base64'), format: 'der', type: 'pkcs8' });
  } catch (error) {
    throw new AuthError('StateFile', `${path}: field privateKey is not a PKCS#8 key (${(error as Error).message})`, { cause: error });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new AuthError('StateFile', `${path}: field privateKey is a ${String(privateKey.asymmetricKeyType)} key, not ed25519`);
  return { id, privateKey, publicKey: publicKeyText(privateKey) };
}

/** The text an agent signs: its id, then the request's canonical text. */
function agentText(id: string, parts: SignedParts): string {
  return `hecate-agent-v2\n${id}\n${canonicalText(parts)}`;
}

/** The two headers of an agent's signature on a request. */
export function agentKeyHeaders(key: AgentKey, parts: SignedParts): Record<string, string> {
  const signature = sign(null, Buffer.from(agentText(key.id, parts)), key.privateKey).toString('base64url');
  return { [AGENT_KEY_HEADERS.key]: key.publicKey, [AGENT_KEY_HEADERS.signature]: signature };
}

/** True when `signature` is `publicKey`'s (base64url, raw ed25519) over agent `id`'s request `parts`. */
export function verifyAgentSignature(publicKey: string, signature: string, id: string, parts: SignedParts): boolean {
  if (!/^[A-Za-z0-9_-]{43}$/.test(publicKey) || !/^[A-Za-z0-9_-]{86}$/.test(signature)) return false;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });
    return verify(null, Buffer.from(agentText(id, parts)), key, Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}
