/**
 * The orchestrator's check of an agent's answer to a stage call, before its output goes on
 * (docs/security.md, docs/engine.md "Replies"): read with a size cap derived from the call, its
 * signature checked (when the swarm has a secret), decoded, and held to the call it answers (its
 * node, its layers, one output per replayed input). A reply that fails is the answering agent's
 * failure: the session charges it, not the next agent.
 */
import type { PeerReply } from '../net/peer-post.js';
import { ServeError } from '../wire/serve-error.js';
import { decodeStageReplyFrame, stageReplyLimit, type StageReply, type StageRequest } from '../wire/stage-protocol.js';

/**
 * What a reply may hold beyond the call's own tensors (which come back through the layers at their
 * sizes): a last stage's logits row (a vocabulary of 262,144 in f32) and the header.
 */
export const STAGE_REPLY_LIMIT_BYTES = 1024 * 1024 + 4096;

/**
 * The body of `response`, at most `limit` bytes; past it the rest is not read.
 * @throws {ServeError} `StageFailed` 502 past the limit
 */
export async function readCapped(response: Pick<PeerReply, 'body' | 'bytes' | 'arrayBuffer'>, nodeId: string, limit = STAGE_REPLY_LIMIT_BYTES): Promise<Uint8Array> {
  const tooLarge = (cause?: unknown) => new ServeError('StageFailed', 502, `agent "${nodeId}" replied more than ${limit} bytes; not read further`, { cause });
  if (response.bytes !== undefined) return response.bytes(limit).catch((error: unknown) => Promise.reject(tooLarge(error)));
  const body = response.body;
  if (body === undefined || body === null) {
    const all = new Uint8Array(await response.arrayBuffer());
    if (all.byteLength > limit) throw tooLarge();
    return all;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}

/**
 * Reads, checks and decodes an agent's reply to `call`.
 * @throws {ServeError} `StageFailed` 502 naming the agent and the field that is wrong
 */
export async function readStageReply(response: PeerReply, nodeId: string, call: StageRequest): Promise<StageReply> {
  const bytes = await readCapped(response, nodeId, stageReplyLimit(call, STAGE_REPLY_LIMIT_BYTES));
  const unsigned = response.checkSignature?.(bytes);
  if (unsigned !== undefined) throw new ServeError('StageFailed', 502, `agent "${nodeId}" replied a stage output not signed with the swarm secret: ${unsigned}`, { field: 'signature' });
  return checkStageReply(bytes, nodeId, call);
}

/**
 * Decodes and checks a stage reply against the call it answers.
 * @throws {ServeError} `StageFailed` 502 naming the agent and the field that is wrong
 */
export function checkStageReply(bytes: Uint8Array, nodeId: string, call: StageRequest): StageReply {
  const bad = (field: string, what: string, got: unknown) => new ServeError('StageFailed', 502, `agent "${nodeId}" replied a malformed stage output: ${field} ${what}, got ${JSON.stringify(got)?.slice(0, 80) ?? String(got)}`, { field });
  let frame: ReturnType<typeof decodeStageReplyFrame>;
  try {
    frame = decodeStageReplyFrame(bytes, Number.POSITIVE_INFINITY, call.replay.length);
  } catch (error) {
    const field = error instanceof ServeError ? (error.field ?? 'body') : 'body';
    throw new ServeError('StageFailed', 502, `agent "${nodeId}" replied a malformed stage message: ${error instanceof Error ? error.message : String(error)}`, { field, cause: error });
  }
  const r = frame.header;
  if (r['nodeId'] !== nodeId) throw bad('nodeId', `must be "${nodeId}" (the agent called)`, r['nodeId']);
  if (r['layerStart'] !== call.layerStart) throw bad('layerStart', `must be ${call.layerStart} (the layers asked)`, r['layerStart']);
  if (r['layerEnd'] !== call.layerEnd) throw bad('layerEnd', `must be ${call.layerEnd} (the layers asked)`, r['layerEnd']);
  const [output, ...replayOutputs] = frame.tensors;
  if (output === undefined) throw bad('output', 'must be the first tensor', 'no tensors');
  if (replayOutputs.length !== call.replay.length) throw bad('replayOutputs', `must be ${call.replay.length} tensors (one per replayed input)`, `${replayOutputs.length} tensors`);
  const ms = r['ms'];
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw bad('ms', 'must be a finite number ≥ 0', ms);
  const cached = r['cachedTokens'];
  if (cached !== undefined && !(Number.isInteger(cached) && (cached as number) >= 0 && (cached as number) <= call.tokens)) throw bad('cachedTokens', `must be an integer from 0 to ${call.tokens} (the call's tokens)`, cached);
  return { nodeId, layerStart: call.layerStart, layerEnd: call.layerEnd, output, replayOutputs, ms, ...(cached !== undefined ? { cachedTokens: cached as number } : {}) };
}
