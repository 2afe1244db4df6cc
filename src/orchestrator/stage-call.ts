/**
 * One stage call on the wire, orchestrator → agent: the request encoded as a stage message and
 * posted to the agent's `/v1/stage`, its reply read capped, its signature checked and its fields
 * held to the call (docs/engine.md). What the call means for a session (budgets, calls in flight,
 * metrics) is the stage runner's (stage-client.ts).
 */
import { agentAudience } from '../wire/request-signing.js';
import type { PeerPost } from '../net/peer-post.js';
import { digestOf, digestTensor, digestTensors } from '../wire/digest.js';
import { FRAME_CONTENT_TYPE } from '../wire/frames.js';
import { ServeError } from '../wire/serve-error.js';
import { encodeStageRequest, STAGE_PATH, type StageReply, type StageRequest } from '../wire/stage-protocol.js';
import { readStageReply } from './stage-reply.js';
import { NodeBusyError } from '../sessions/node-busy.js';
import { StateLostError } from '../sessions/state-lost.js';

/**
 * Sends `request` to the agent at `url` and returns its checked reply.
 * @throws {NodeBusyError} when the agent answers 503 `Full` (at capacity: its KV memory or body budget taken), charged to no node
 * @throws {StateLostError} when the agent answers 409 `UnknownSession` (it does not hold the session's earlier steps), charged to no node
 * @throws {ServeError} `StageFailed` 502 when the agent answers another error, an unsigned or a malformed reply
 */
export async function callStage(post: PeerPost, url: string, nodeId: string, request: StageRequest, signal: AbortSignal): Promise<StageReply> {
  const response = await post(`${url}${STAGE_PATH}`, encodeStageRequest(request), signal, 'POST', FRAME_CONTENT_TYPE, agentAudience(nodeId));
  if (!response.ok) {
    const text = await response.text().catch(() => '');
    const said = `agent "${nodeId}" answered ${response.status}: ${text.slice(0, 300)}`;
    // The agent's own word that it is at capacity, or that it lost the session's state (send it fresh with its
    // replay); a bare 503 or 409 (a proxy before a dead agent, a closing server) is a failure.
    if (response.status === 503 && errorCode(text) === 'Full') throw new NodeBusyError(nodeId, said);
    if (response.status === 409 && errorCode(text) === 'UnknownSession') throw new StateLostError(nodeId, said);
    throw new ServeError('StageFailed', 502, said);
  }
  return readStageReply(response, nodeId, request);
}

/** A stage call of the digest protocol: its input and replay are 32-bit digests. */
export interface DigestStageRequest extends Omit<StageRequest, 'input' | 'replay'> {
  readonly input: number;
  readonly replay: readonly number[];
}

/** The reply to a {@link DigestStageRequest}: its outputs are digests. */
export interface DigestStageReply extends Omit<StageReply, 'output' | 'replayOutputs'> {
  readonly output: number;
  readonly replayOutputs: readonly number[];
}

/**
 * {@link callStage} for the digest protocol: digests go as `u32` `[1, 1]` tensors, and come back
 * as digests (a reply of any other tensor is the agent's failure, 502).
 */
export async function callDigestStage(post: PeerPost, url: string, nodeId: string, request: DigestStageRequest, signal: AbortSignal): Promise<DigestStageReply> {
  const reply = await callStage(post, url, nodeId, { ...request, input: digestTensor(request.input), replay: digestTensors(request.replay) }, signal);
  try {
    return { ...reply, output: digestOf(reply.output, 'output'), replayOutputs: reply.replayOutputs.map((t, i) => digestOf(t, `replayOutputs/${i}`)) };
  } catch (error) {
    throw new ServeError('StageFailed', 502, `agent "${nodeId}" replied a malformed stage output: ${(error as Error).message}`, { field: (error as ServeError).field ?? 'output', cause: error });
  }
}

/** The house's error code of an error answer (`{ "error": { "code": … } }`), if it is one. */
function errorCode(text: string): unknown {
  try {
    return (JSON.parse(text) as { error?: { code?: unknown } } | null)?.error?.code;
  } catch {
    return undefined;
  }
}
