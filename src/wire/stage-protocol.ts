/**
 * The stage call between the orchestrator and an agent (docs/engine.md): `POST /v1/stage` with a
 * binary message (frames.ts) whose header carries the control fields and whose tensors carry the
 * input and the replay; the reply is a message of the same kind with the outputs.
 */
import { decodeFrame, encodeFrame, tensorFrameBytes, type FrameBounds } from './frames.js';
import { ServeError } from './serve-error.js';
import { STAGE_LIMITS } from './stage-bounds.js';
import { elementsOf, type Tensor } from './tensor.js';

/** The agent's path of a stage call. */
export const STAGE_PATH = '/v1/stage';

/** `POST /v1/stage`: run layers `[layerStart, layerEnd)` of one step of one session. */
export interface StageRequest {
  readonly sessionId: string;
  readonly modelId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly step: number;
  /** First call of this stage in the session: drop what is held for these layers, rebuild from `replay`. */
  readonly fresh: boolean;
  /** Tokens the input carries (the prompt's on the first step, 1 after). */
  readonly tokens: number;
  /** The activation (token ids on the first stage; the digest engine's `u32` `[1, 1]`). */
  readonly input: Tensor;
  /** Earlier inputs at `layerStart`, oldest first, to rebuild the caches before `input`. */
  readonly replay: readonly Tensor[];
  /** The prompt's text, on the first step: the agent's prefix cache finds its cached tokens. */
  readonly prompt?: string;
}

/** The agent's answer. */
export interface StageReply {
  readonly nodeId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly output: Tensor;
  /** Outputs of `replay`, in order (the next replacement's replay, when it starts at `layerEnd`). */
  readonly replayOutputs: readonly Tensor[];
  /** Milliseconds the call took on the agent. */
  readonly ms: number;
  /** With a prompt: its leading tokens the agent held cached (charged no prefill time). */
  readonly cachedTokens?: number;
}

/** Bytes a request's header may take: a prompt of {@link STAGE_LIMITS}.tokens × 4 characters, JSON-escaped (6 bytes a character at worst), and the fields. */
export const STAGE_HEADER_BYTES = 6 * 4 * STAGE_LIMITS.tokens + 4096;

/**
 * The most bytes a stage request may take for activations of `maxWidth` elements per token: its
 * header, the input (at most {@link STAGE_LIMITS}.tokens tokens) and a replay of at most
 * {@link STAGE_LIMITS}.replay inputs carrying at most `tokens + replay` tokens, 4 bytes an
 * element, with each tensor's frame. Read no further (docs/engine.md, "Bounds").
 */
export function stageRequestBounds(maxWidth: number): FrameBounds {
  const maxTensors = 1 + STAGE_LIMITS.replay;
  const tokens = 2 * STAGE_LIMITS.tokens + STAGE_LIMITS.replay;
  return { maxHeaderBytes: STAGE_HEADER_BYTES, maxTensors, maxBytes: 12 + STAGE_HEADER_BYTES + tokens * maxWidth * 4 + maxTensors * (8 + 4 * 4 + 3), names: REQUEST_NAMES };
}

/** A stage request as one message: its control fields in the header, `[input, ...replay]` as tensors. */
export function encodeStageRequest(request: StageRequest): Uint8Array {
  const { input, replay, ...header } = request;
  return encodeFrame(header, [input, ...replay]);
}

/** A stage reply as one message: `[output, ...replayOutputs]` as tensors. */
export function encodeStageReply(reply: StageReply): Uint8Array {
  const { output, replayOutputs, ...header } = reply;
  return encodeFrame(header, [output, ...replayOutputs]);
}

/** A request's tensors are its input, then its replay. */
const REQUEST_NAMES = { all: 'replay', tensor: (i: number) => (i === 0 ? 'input' : `replay/${i - 1}`) };

const REQUEST_FIELDS = new Set(['sessionId', 'modelId', 'layerStart', 'layerEnd', 'step', 'fresh', 'tokens', 'prompt']);

/**
 * Reads a stage request within `bounds` and checks its header's fields and its tensors against the
 * call's tokens and `maxWidth` (elements per token).
 * @throws {ServeError} 400 `InvalidRequest` naming the field at fault
 */
export function decodeStageRequest(bytes: Uint8Array, maxWidth: number): StageRequest {
  const { header: h, tensors } = decodeFrame(bytes, stageRequestBounds(maxWidth));
  const bad = (field: string, what: string, got: unknown) => new ServeError('InvalidRequest', 400, `${field}: ${what}, got ${JSON.stringify(got)?.slice(0, 60) ?? String(got)}`, { field });
  for (const key of Object.keys(h)) if (!REQUEST_FIELDS.has(key)) throw bad(key, 'is not a field of a stage call', h[key]);
  const text = (key: string, max: number): string => {
    const v = h[key];
    if (typeof v !== 'string' || v.length < 1 || v.length > max) throw bad(key, `must be a string of 1 to ${max} characters`, v);
    return v;
  };
  const int = (key: string, min: number, max: number): number => {
    const v = h[key];
    if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) throw bad(key, `must be an integer from ${min} to ${max}`, v);
    return v as number;
  };
  const sessionId = text('sessionId', 200);
  const modelId = text('modelId', 200);
  const layerStart = int('layerStart', 0, STAGE_LIMITS.layers);
  const layerEnd = int('layerEnd', 1, STAGE_LIMITS.layers);
  const step = int('step', 0, 1_000_000);
  const tokens = int('tokens', 1, STAGE_LIMITS.tokens);
  if (typeof h['fresh'] !== 'boolean') throw bad('fresh', 'must be a boolean', h['fresh']);
  const prompt = h['prompt'];
  if (prompt !== undefined && (typeof prompt !== 'string' || prompt.length > STAGE_LIMITS.tokens * 4)) throw bad('prompt', `must be a string of at most ${STAGE_LIMITS.tokens * 4} characters`, typeof prompt === 'string' ? `${prompt.length} characters` : prompt);
  const [input, ...replay] = tensors;
  if (input === undefined) throw bad('input', 'missing: a stage call carries its input as its first tensor', 0);
  checkActivation(input, 'input', tokens, maxWidth);
  let replayTokens = 0;
  for (const [i, t] of replay.entries()) {
    const rows = checkActivation(t, `replay/${i}`, STAGE_LIMITS.tokens, maxWidth);
    replayTokens += rows;
    if (replayTokens > STAGE_LIMITS.tokens + replay.length) throw bad(`replay/${i}`, `the replay carries more than ${STAGE_LIMITS.tokens + replay.length} tokens (a prompt's and one per later step)`, replayTokens);
  }
  return { sessionId, modelId, layerStart, layerEnd, step, fresh: h['fresh'], tokens, input, replay, ...(prompt !== undefined ? { prompt: prompt as string } : {}) };
}

/**
 * An activation's tokens (its leading dimension; 1 for a scalar) after checking it holds at most
 * `tokens` of them and at most `maxWidth` elements each.
 */
function checkActivation(t: Tensor, field: string, tokens: number, maxWidth: number): number {
  const rows = t.shape.length === 0 ? 1 : (t.shape[0] as number);
  const perToken = rows === 0 ? 0 : elementsOf(t.shape) / rows;
  if (rows > tokens) throw new ServeError('InvalidRequest', 400, `${field}: ${rows} tokens ([${t.shape.join(', ')}]), more than the call's ${tokens}`, { field });
  if (perToken > maxWidth) throw new ServeError('InvalidRequest', 400, `${field}: ${perToken} elements a token ([${t.shape.join(', ')}]), wider than this agent's engine takes (${maxWidth})`, { field });
  return rows;
}

/** The most bytes a reply to `request` may take: its tensors back through the layers (same sizes), plus `allowance` for a logits row and the header. */
export function stageReplyLimit(request: StageRequest, allowance: number): number {
  let bytes = 12 + allowance + tensorFrameBytes(request.input);
  for (const t of request.replay) bytes += tensorFrameBytes(t);
  return bytes;
}

/** A reply's tensors are its output, then the replay's outputs. */
const REPLY_NAMES = { all: 'replayOutputs', tensor: (i: number) => (i === 0 ? 'output' : `replayOutputs/${i - 1}`) };

/**
 * Reads a stage reply's message (within `maxBytes`, one output per replayed input at most) into
 * its header and tensors; the orchestrator checks the fields against the call (stage-reply.ts).
 */
export function decodeStageReplyFrame(bytes: Uint8Array, maxBytes: number, replay: number): { readonly header: Record<string, unknown>; readonly tensors: readonly Tensor[] } {
  return decodeFrame(bytes, { maxBytes, maxHeaderBytes: 4096, maxTensors: 1 + replay, names: REPLY_NAMES });
}
