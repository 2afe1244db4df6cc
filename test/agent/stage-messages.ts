/** Test helpers: a digest stage call as a stage message, posted (signed or not), its answer decoded. */
import { agentAudience } from '../../src/wire/request-signing.js';
import { digestOf, digestTensor, digestTensors } from '../../src/wire/digest.js';
import { FRAME_CONTENT_TYPE } from '../../src/wire/frames.js';
import { signedHeaders } from '../../src/wire/signed-headers.js';
import { decodeStageReplyFrame, encodeStageRequest, type StageRequest } from '../../src/wire/stage-protocol.js';
import type { Tensor } from '../../src/wire/tensor.js';

/** A stage call of the digest protocol: digests for the input and the replay (or any tensor as the input). */
export interface DigestCall extends Omit<StageRequest, 'input' | 'replay'> {
  readonly input: number | Tensor;
  readonly replay: readonly number[];
}

/** The call as the bytes the orchestrator sends. */
export function stageMessage(call: DigestCall): Uint8Array {
  return encodeStageRequest({ ...call, input: typeof call.input === 'number' ? digestTensor(call.input) : call.input, replay: digestTensors(call.replay) });
}

/** The audience of the agent at each origin asked so far. */
const audiences = new Map<string, Promise<string>>();
const audienceAt = (origin: string): Promise<string> => {
  let audience = audiences.get(origin);
  if (audience === undefined) {
    audience = fetch(`${origin}/v1/health`).then(async (r) => agentAudience(((await r.json()) as { id: string }).id));
    audiences.set(origin, audience);
  }
  return audience;
};

/**
 * Posts `call` to `url` (the agent's `/v1/stage`), signed with `secret` when given; the answer's
 * status, and its body: a 200's stage message as digests (`output`, `replayOutputs`), else the JSON error.
 */
export async function postStage(url: string, call: DigestCall, secret?: Uint8Array, signal?: AbortSignal, audience?: string): Promise<{ status: number; body: any; headers: Headers }> {
  const bytes = stageMessage(call);
  // Signed for the agent at `url` unless told: its id from its `GET /v1/health`, asked once.
  audience ??= secret === undefined ? '' : await audienceAt(new URL(url).origin);
  const headers = { 'content-type': FRAME_CONTENT_TYPE, ...(secret !== undefined ? signedHeaders({ secret }, 'POST', url, bytes, Date.now(), audience) : {}) };
  const response = await fetch(url, { method: 'POST', headers, body: bytes, ...(signal !== undefined ? { signal } : {}) });
  const raw = new Uint8Array(await response.arrayBuffer());
  if (response.status !== 200) return { status: response.status, body: JSON.parse(Buffer.from(raw).toString('utf8')), headers: response.headers };
  const { header, tensors } = decodeStageReplyFrame(raw, Number.POSITIVE_INFINITY, call.replay.length);
  const [output, ...rest] = tensors;
  return { status: 200, headers: response.headers, body: { ...header, output: digestOf(output as Tensor, 'output'), replayOutputs: rest.map((t, i) => digestOf(t, `replayOutputs/${i}`)) } };
}
