/**
 * One stage call on the wire, orchestrator → agent: the request encoded and posted to the agent's
 * `/v1/stage`, its reply read capped and checked against the call (docs/engine.md). What the call
 * means for a session (budgets, calls in flight, metrics) is the stage runner's (stage-client.ts).
 */
import type { PeerPost } from '../net/peer-post.js';
import { ServeError } from '../wire/serve-error.js';
import type { StageReply, StageRequest } from '../wire/stage-protocol.js';
import { checkStageReply, readCapped } from './stage-reply.js';

/**
 * Sends `request` to the agent at `url` and returns its checked reply.
 * @throws {ServeError} `StageFailed` 502 when the agent answers an error or a malformed reply
 */
export async function callStage(post: PeerPost, url: string, nodeId: string, request: StageRequest, signal: AbortSignal): Promise<StageReply> {
  const response = await post(`${url}/v1/stage`, JSON.stringify(request), signal);
  if (!response.ok) throw new ServeError('StageFailed', 502, `agent "${nodeId}" answered ${response.status}: ${(await readCapped(response, nodeId)).slice(0, 300)}`);
  return checkStageReply(await readCapped(response, nodeId), nodeId, request);
}
