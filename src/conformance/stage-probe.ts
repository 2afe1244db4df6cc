/**
 * The conformance runner's stage calls: stage messages (docs/engine.md, "Frames") posted to the
 * agent signed as an orchestrator signs them (or signed wrongly, or not at all, on purpose), and
 * the answers read back whole: status, error body, reply tensors, reply signature.
 */
import { FRAME_CONTENT_TYPE } from '../wire/frames.js';
import { agentAudience, checkReplySignature, SIGNATURE_HEADERS } from '../wire/request-signing.js';
import { signedHeaders } from '../wire/signed-headers.js';
import { decodeStageReplyFrame, encodeStageRequest, STAGE_PATH, type StageRequest } from '../wire/stage-protocol.js';
import { DROP_PATH } from '../wire/drop-protocol.js';
import type { Tensor } from '../wire/tensor.js';

/** How a probe signs its call. */
export type Signing = 'secret' | 'none' | 'wrong-secret' | 'other-agent' | { readonly replayOf: Record<string, string> };

/** What came back from one call. */
export interface ProbeAnswer {
  readonly status: number;
  /** The error body's `error` object, when the answer is JSON with one. */
  readonly error?: { readonly code?: unknown; readonly message?: unknown; readonly field?: unknown };
  /** The reply's header fields and tensors, for a 200 stage message. */
  readonly reply?: { readonly header: Record<string, unknown>; readonly output: Tensor; readonly replayOutputs: readonly Tensor[] };
  /** Why the reply's signature does not hold, when the runner has the secret and it does not. */
  readonly replySignature?: string;
  /** The request's signature headers, to replay them. */
  readonly sentHeaders: Record<string, string>;
  /** Why the answer could not be read at all (not a stage message, a network error). */
  readonly unreadable?: string;
}

/** Sends stage calls and drops to one agent. */
export class StageProbe {
  private readonly audience: string;

  /** To the agent at base URL `agent` whose id is `id` (its calls are signed for it). */
  constructor(
    private readonly agent: string,
    id: string,
    private readonly secret: Uint8Array | undefined,
    private readonly timeoutMs: number,
  ) {
    this.audience = agentAudience(id);
  }

  /** Posts `request` as a stage message. */
  stage(request: StageRequest, signing: Signing = 'secret'): Promise<ProbeAnswer> {
    return this.post(STAGE_PATH, encodeStageRequest(request), FRAME_CONTENT_TYPE, signing, 1 + request.replay.length);
  }

  /** Posts raw bytes to the stage path (malformed messages). */
  raw(bytes: Uint8Array, contentType = FRAME_CONTENT_TYPE): Promise<ProbeAnswer> {
    return this.post(STAGE_PATH, bytes, contentType, 'secret', 1);
  }

  /** Drops `sessionId` on the agent. */
  drop(sessionId: string): Promise<ProbeAnswer> {
    return this.post(DROP_PATH, new TextEncoder().encode(JSON.stringify({ sessionId })), 'application/json', 'secret', 0);
  }

  private async post(path: string, body: Uint8Array, contentType: string, signing: Signing, expectedTensors: number): Promise<ProbeAnswer> {
    const url = `${this.agent}${path}`;
    let sentHeaders: Record<string, string> = {};
    if (typeof signing === 'object') sentHeaders = signing.replayOf;
    else if (signing === 'secret' && this.secret !== undefined) sentHeaders = signedHeaders({ secret: this.secret }, 'POST', url, body, Date.now(), this.audience);
    else if (signing === 'other-agent' && this.secret !== undefined) sentHeaders = signedHeaders({ secret: this.secret }, 'POST', url, body, Date.now(), `${this.audience}-other`);
    else if (signing === 'wrong-secret') sentHeaders = signedHeaders({ secret: new Uint8Array(32).fill(7) }, 'POST', url, body, Date.now(), this.audience);
    let response: Response;
    let bytes: Uint8Array;
    try {
      response = await fetch(url, { method: 'POST', headers: { 'content-type': contentType, ...sentHeaders }, body, redirect: 'error', signal: AbortSignal.timeout(this.timeoutMs) });
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      return { status: 0, sentHeaders, unreadable: error instanceof Error ? error.message : String(error) };
    }
    if (response.status !== 200 || path !== STAGE_PATH) {
      try {
        const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { error?: ProbeAnswer['error'] };
        return { status: response.status, sentHeaders, ...(parsed.error !== undefined ? { error: parsed.error } : {}) };
      } catch {
        return { status: response.status, sentHeaders, unreadable: 'the answer is not JSON' };
      }
    }
    const nonce = sentHeaders[SIGNATURE_HEADERS.nonce];
    const replySignature = this.secret !== undefined && nonce !== undefined ? checkReplySignature(this.secret, { audience: this.audience, method: 'POST', path, nonce }, response.headers, bytes, Date.now()) : undefined;
    try {
      const { header, tensors } = decodeStageReplyFrame(bytes, bytes.byteLength, expectedTensors - 1);
      const [output, ...replayOutputs] = tensors;
      if (output === undefined) return { status: 200, sentHeaders, unreadable: 'the reply carries no output tensor' };
      return { status: 200, sentHeaders, reply: { header, output, replayOutputs }, ...(replySignature !== undefined ? { replySignature } : {}) };
    } catch (error) {
      return { status: 200, sentHeaders, unreadable: `the reply is not a stage message: ${error instanceof Error ? error.message : String(error)}` };
    }
  }
}
