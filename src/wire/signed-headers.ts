/** The headers a process of the swarm signs a request with: the swarm secret's HMAC, and an agent's key signature. */
import { agentKeyHeaders, type AgentKey } from './agent-key.js';
import { newNonce, signatureHeaders, type SignedParts } from './request-signing.js';

/** What signs a request: the swarm secret, and for an agent its key pair. */
export interface RequestSigner {
  readonly secret: Uint8Array;
  readonly key?: AgentKey;
}

/**
 * The headers of a `method` request to `url` for receiver `audience` with `body` at `now` (ms since
 * 1970): the HMAC headers, and the agent's key signature when `signer.key` is given.
 */
export function signedHeaders(signer: RequestSigner, method: string, url: string, body: string | Uint8Array, now: number, audience: string): Record<string, string> {
  const target = new URL(url);
  const parts: SignedParts = { audience, method, path: `${target.pathname}${target.search}`, timestamp: Math.round(now), nonce: newNonce(), body };
  return { ...signatureHeaders(signer.secret, parts), ...(signer.key !== undefined ? agentKeyHeaders(signer.key, parts) : {}) };
}
