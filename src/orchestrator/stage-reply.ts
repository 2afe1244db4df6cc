/**
 * The orchestrator's check of an agent's answer to a stage call, before its output goes on
 * (docs/security.md): read with a size cap, parsed, and held to the schema and to the call it
 * answers (its node, its layers, one replay output per replayed input). A reply that fails is the
 * answering agent's failure: the session charges it, not the next agent.
 */
import { ServeError } from '../wire/serve-error.js';
import type { StageReply, StageRequest } from '../wire/stage-protocol.js';

/** The most bytes of an agent's reply read: far above an honest one (4,096 replay outputs ≈ 45 KB). */
export const STAGE_REPLY_LIMIT_BYTES = 1024 * 1024;

/**
 * The body of `response`, at most `limit` bytes; past it the rest is not read.
 * @throws {ServeError} `StageFailed` 502 past the limit
 */
export async function readCapped(response: { readonly body?: ReadableStream<Uint8Array> | null; text(): Promise<string> }, nodeId: string, limit = STAGE_REPLY_LIMIT_BYTES): Promise<string> {
  const tooLarge = () => new ServeError('StageFailed', 502, `agent "${nodeId}" replied more than ${limit} bytes; not read further`);
  // A reply read whole already (node:https, under its own larger cap: peer-post.ts) has no stream
  // left to cap: this cap is checked on what was read.
  if (response.body === undefined) {
    const text = await response.text();
    if (Buffer.byteLength(text, 'utf8') > limit) throw tooLarge();
    return text;
  }
  const body = response.body;
  if (body === null) return '';
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
  return Buffer.concat(chunks).toString('utf8');
}

const isUint32 = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 0xffff_ffff;

/**
 * Parses and checks a stage reply against the call it answers.
 * @throws {ServeError} `StageFailed` 502 naming the agent and the field that is wrong
 */
export function checkStageReply(text: string, nodeId: string, call: StageRequest): StageReply {
  const bad = (field: string, what: string, got: unknown) => new ServeError('StageFailed', 502, `agent "${nodeId}" replied a malformed stage output: ${field} ${what}, got ${JSON.stringify(got)?.slice(0, 80) ?? String(got)}`, { field });
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch {
    throw bad('body', 'must be JSON', text.slice(0, 80));
  }
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply)) throw bad('body', 'must be an object', reply);
  const r = reply as Record<string, unknown>;
  if (r['nodeId'] !== nodeId) throw bad('nodeId', `must be "${nodeId}" (the agent called)`, r['nodeId']);
  if (r['layerStart'] !== call.layerStart) throw bad('layerStart', `must be ${call.layerStart} (the layers asked)`, r['layerStart']);
  if (r['layerEnd'] !== call.layerEnd) throw bad('layerEnd', `must be ${call.layerEnd} (the layers asked)`, r['layerEnd']);
  if (!isUint32(r['output'])) throw bad('output', 'must be a 32-bit unsigned integer', r['output']);
  const replayOutputs = r['replayOutputs'];
  if (!Array.isArray(replayOutputs) || replayOutputs.length !== call.replay.length) throw bad('replayOutputs', `must be an array of ${call.replay.length} outputs (one per replayed input)`, Array.isArray(replayOutputs) ? `${replayOutputs.length} items` : replayOutputs);
  const wrong = replayOutputs.findIndex((x) => !isUint32(x));
  if (wrong !== -1) throw bad(`replayOutputs/${wrong}`, 'must be a 32-bit unsigned integer', replayOutputs[wrong]);
  const ms = r['ms'];
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw bad('ms', 'must be a finite number ≥ 0', ms);
  const cached = r['cachedTokens'];
  if (cached !== undefined && !(Number.isInteger(cached) && (cached as number) >= 0 && (cached as number) <= call.tokens)) throw bad('cachedTokens', `must be an integer from 0 to ${call.tokens} (the call's tokens)`, cached);
  return { nodeId, layerStart: call.layerStart, layerEnd: call.layerEnd, output: r['output'] as number, replayOutputs: replayOutputs as number[], ms, ...(cached !== undefined ? { cachedTokens: cached as number } : {}) };
}
