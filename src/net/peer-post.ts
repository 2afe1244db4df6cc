/**
 * How a process of the swarm POSTs to another (the orchestrator to an agent's stage server, an
 * agent to the orchestrator): `fetch` for plain http and the system's CAs; over https with a
 * configured CA, `node:https` trusting it (fetch takes no CA). Either way the request is signed
 * with the swarm secret (and the agent's key) when one is given, and redirects are not followed.
 */
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { TimeSource } from '../runtime/types.js';
import { signedHeaders, type RequestSigner } from '../wire/signed-headers.js';

/** The parts of a reply the callers read. */
export interface PeerReply {
  readonly status: number;
  readonly ok: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
  /** The body as a stream, when it has not been read yet (fetch); absent when read whole, capped (node:https). */
  readonly body?: ReadableStream<Uint8Array> | null;
}

/** The most a reply read over node:https may hold; a larger one is cut off and refused. */
const HTTPS_REPLY_LIMIT_BYTES = 4 * 1024 * 1024;

/** POSTs `body` (JSON text) to `url`; `method` defaults to POST. */
export type PeerPost = (url: string, body: string, signal: AbortSignal, method?: string) => Promise<PeerReply>;

/** What a {@link PeerPost} needs: who signs, with which wall clock, and the CA to trust. */
export interface PeerPostOptions {
  readonly signer?: RequestSigner;
  /** Stamps the signatures: wall time. */
  readonly clock: TimeSource;
  /** PEM certificates to trust over https. */
  readonly ca?: string;
}

/** A poster with its https connection pool, closed with {@link PeerPoster.close}. */
export interface PeerPoster {
  readonly post: PeerPost;
  close(): void;
}

/** A signed POST over fetch, or over `node:https` trusting `options.ca`. */
export function createPeerPoster(options: PeerPostOptions): PeerPoster {
  const pool = options.ca !== undefined ? new HttpsAgent({ keepAlive: true, ca: options.ca }) : undefined;
  const post: PeerPost = async (url, body, signal, method = 'POST') => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(options.signer !== undefined ? signedHeaders(options.signer, method, url, body, options.clock.now()) : {}) };
    if (pool === undefined || !url.startsWith('https:')) return fetch(url, { method, headers, body, signal, redirect: 'manual' });
    return httpsPost(pool, url, method, headers, body, signal);
  };
  return { post, close: () => pool?.destroy() };
}

function httpsPost(pool: HttpsAgent, url: string, method: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<PeerReply> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const req = httpsRequest(url, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: pool, signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > HTTPS_REPLY_LIMIT_BYTES) {
          res.destroy();
          reject(new Error(`${url} replied more than ${HTTPS_REPLY_LIMIT_BYTES} bytes; not read further`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', reject);
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const status = res.statusCode ?? 0;
        resolve({
          status,
          ok: status >= 200 && status < 300,
          text: async () => bytes.toString('utf8'),
          json: async () => JSON.parse(bytes.toString('utf8')) as unknown,
          arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
