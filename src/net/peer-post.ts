/**
 * How a process of the swarm POSTs to another (the orchestrator to an agent's stage server, an
 * agent to the orchestrator): undici's `Agent`, one pool of kept-alive connections per origin,
 * over https trusting the configured CA (or the system's). The request is signed with the swarm
 * secret (and the agent's key) when one is given, and its signed reply can be checked against it;
 * redirects are not followed.
 */
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import type { TimeSource } from '../runtime/types.js';
import { checkReplySignature, SIGNATURE_HEADERS } from '../wire/request-signing.js';
import { signedHeaders, type RequestSigner } from '../wire/signed-headers.js';
import { streamPost, type PeerStreamReply } from './peer-stream.js';

/** The parts of a reply the callers read. */
export interface PeerReply {
  readonly status: number;
  readonly ok: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
  /** The body as a web stream, read as it arrives (a streamed answer); read it or the methods, not both. */
  readonly body?: ReadableStream<Uint8Array> | null;
  /** The body's chunks as they arrive, without a web stream's cost per chunk (ending the iteration early destroys it); as `body`, read one. */
  readonly chunks?: AsyncIterable<Uint8Array>;
  /** The reply's headers. */
  readonly headers?: { get(name: string): string | null };
  /**
   * The body's bytes, at most `limit`: past it the rest is not read and this rejects (its message
   * says so). Absent on a fetch Response (read `body` capped instead).
   */
  bytes?(limit: number): Promise<Uint8Array>;
  /**
   * With a signer: why `body` (this reply's bytes) is not the reply signed with the swarm secret
   * to this very request, or undefined when it is (request-signing.ts, replies).
   */
  checkSignature?(body: Uint8Array): string | undefined;
}

/**
 * POSTs `body` (JSON text, or bytes of `contentType`) to `url`; `method` defaults to POST. Signed,
 * the request is for receiver `audience` (request-signing.ts): an agent's (`agentAudience(id)`),
 * or the orchestrators' of a swarm; `null` sends it unsigned (`GET /v1/audience`).
 */
export type PeerPost = (url: string, body: string | Uint8Array, signal: AbortSignal, method?: string, contentType?: string, audience?: string | null) => Promise<PeerReply>;

/** What a {@link PeerPost} needs: who signs, with which wall clock, and the CA to trust. */
export interface PeerPostOptions {
  readonly signer?: RequestSigner;
  /** Stamps the signatures and checks the replies': wall time. */
  readonly clock: TimeSource;
  /** PEM certificates to trust over https (instead of the system's). */
  readonly ca?: string;
  /** Connections kept per origin. @defaultValue 64 */
  readonly connections?: number;
}

/**
 * POSTs JSON `body` to `url` and reads its answer as it arrives (peer-stream.ts): signed for
 * `audience` as {@link PeerPost}'s, its reply not checked (a stream is not signed back).
 */
export type PeerStream = (url: string, body: string, signal: AbortSignal, audience?: string | null) => Promise<PeerStreamReply>;

/** A poster with its connection pools, closed with {@link PeerPoster.close}. */
export interface PeerPoster {
  readonly post: PeerPost;
  /** The same pools, an answer read as it arrives. */
  readonly stream: PeerStream;
  close(): void;
}

/** An unsigned POST over fetch (no swarm secret configured), honouring the content type. */
export const plainPost: PeerPost = (url, body, signal, method = 'POST', contentType = 'application/json') => fetch(url, { method, headers: { 'content-type': contentType }, body, signal, redirect: 'error' });

/** A signed POST over pooled, kept-alive connections (undici), trusting `options.ca` over https. */
export function createPeerPoster(options: PeerPostOptions): PeerPoster {
  const dispatcher = new Agent({ connections: options.connections ?? 64, keepAliveTimeout: 30_000, ...(options.ca !== undefined ? { connect: { ca: options.ca } } : {}) });
  const post: PeerPost = async (url, body, signal, method = 'POST', contentType = 'application/json', audience) => {
    if (options.signer !== undefined && audience === undefined) throw new Error(`${method} ${url}: a signed request needs its receiver's audience`);
    const signed = options.signer !== undefined && audience !== null ? signedHeaders(options.signer, method, url, body, options.clock.now(), audience as string) : undefined;
    const headers: Record<string, string> = { 'content-type': contentType, ...signed };
    const response = await request(url, { method: method as 'POST', headers, body: method === 'GET' ? null : typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength), signal, dispatcher });
    const status = response.statusCode;
    const header = (name: string): string | undefined => {
      const v = response.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    let web: ReadableStream<Uint8Array> | undefined;
    const reply: PeerReply = {
      status,
      ok: status >= 200 && status < 300,
      headers: { get: (name: string) => header(name.toLowerCase()) ?? null },
      get body() {
        web ??= Readable.toWeb(response.body) as ReadableStream<Uint8Array>;
        return web;
      },
      chunks: response.body,
      text: () => response.body.text(),
      json: () => response.body.json(),
      arrayBuffer: () => response.body.arrayBuffer(),
      async bytes(limit) {
        const declared = Number(header('content-length'));
        if (declared > limit) {
          response.body.destroy();
          throw new Error(`${url} replied ${declared} bytes, more than ${limit}; not read`);
        }
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of response.body as AsyncIterable<Buffer>) {
          size += chunk.byteLength;
          if (size > limit) {
            response.body.destroy();
            throw new Error(`${url} replied more than ${limit} bytes; not read further`);
          }
          chunks.push(chunk);
        }
        return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      },
      ...(signed !== undefined && options.signer !== undefined
        ? {
            checkSignature: (bytes: Uint8Array) => {
              const target = new URL(url);
              const nonce = signed[SIGNATURE_HEADERS.nonce] as string;
              return checkReplySignature((options.signer as RequestSigner).secret, { audience: audience as string, method, path: `${target.pathname}${target.search}`, nonce }, { get: header }, bytes, options.clock.now());
            },
          }
        : {}),
    };
    return reply;
  };
  const stream: PeerStream = async (url, body, signal, audience) => {
    if (options.signer !== undefined && audience === undefined) throw new Error(`POST ${url}: a signed request needs its receiver's audience`);
    const signed = options.signer !== undefined && audience !== null ? signedHeaders(options.signer, 'POST', url, body, options.clock.now(), audience as string) : undefined;
    return streamPost(dispatcher, url, { 'content-type': 'application/json', ...signed }, body, signal);
  };
  return {
    post,
    stream,
    close: () => {
      void dispatcher.destroy().catch(() => {});
    },
  };
}
