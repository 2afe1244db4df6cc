/** The stage wire's binary messages: round trips of every dtype, bounds refused naming the field, truncation, signatures. */
import { describe, expect, it } from 'vitest';
import { decodeFrame, encodeFrame, FRAME_MAGIC, type FrameBounds } from '../../src/wire/frames.js';
import { decodeStageRequest, encodeStageRequest, stageRequestBounds, type StageRequest } from '../../src/wire/stage-protocol.js';
import { DTYPE_BYTES, type DType, type Tensor } from '../../src/wire/tensor.js';
import { checkReplySignature, replySignatureHeaders } from '../../src/wire/request-signing.js';
import { digestTensor } from '../../src/wire/digest.js';
import { STAGE_LIMITS } from '../../src/wire/stage-bounds.js';

const wide: FrameBounds = { maxBytes: 1 << 24, maxHeaderBytes: 1 << 16, maxTensors: 100 };
const tensorOf = (dtype: DType, shape: number[], seed: number): Tensor => {
  const n = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype];
  return { dtype, shape, data: Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff) };
};
const call = (extra: Partial<StageRequest> = {}): StageRequest => ({ sessionId: 's', modelId: 'm', layerStart: 0, layerEnd: 4, step: 0, fresh: true, tokens: 3, input: tensorOf('f32', [3, 8], 1), replay: [], ...extra });
const fieldOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (error) {
    return (error as { field?: string }).field;
  }
  return 'no error';
};

describe('encodeFrame / decodeFrame', () => {
  it('round-trips every dtype, shapes of rank 0 to 4 (odd byte lengths padded), and the header', () => {
    const tensors = (['f32', 'f16', 'bf16', 'i32', 'u32'] as const).flatMap((dtype, k) => [tensorOf(dtype, [], k), tensorOf(dtype, [3], k), tensorOf(dtype, [1, 3], k), tensorOf(dtype, [2, 1, 3], k), tensorOf(dtype, [1, 2, 1, 3], k), tensorOf(dtype, [0, 5], k)]);
    const bytes = encodeFrame({ a: 'é', n: 1 }, tensors);
    expect(bytes.byteLength % 4).toBe(0);
    const back = decodeFrame(bytes, wide);
    expect(back.header).toEqual({ a: 'é', n: 1 });
    expect(back.tensors.map((t) => [t.dtype, t.shape, [...t.data]])).toEqual(tensors.map((t) => [t.dtype, t.shape, [...t.data]]));
    expect(encodeFrame({ a: 'é', n: 1 }, back.tensors)).toEqual(bytes); // same bytes again
  });

  it('refuses a truncated message at every length, naming where it stopped', () => {
    const bytes = encodeFrame({ x: 1 }, [tensorOf('f16', [2, 3], 0), tensorOf('i32', [4], 1)]);
    for (let n = 0; n < bytes.byteLength; n++) {
      const field = fieldOf(() => decodeFrame(bytes.subarray(0, n), wide));
      expect(field, `cut at ${n}`).toMatch(/^(body|header|tensors(\/\d+(\/(shape|data))?)?)$/);
    }
    expect(() => decodeFrame(bytes.subarray(0, bytes.byteLength - 1), wide)).toThrow(/truncated/);
  });

  it('refuses a wrong magic, trailing bytes, an unknown dtype, a rank over 4, data not its shape, naming the field', () => {
    const bytes = encodeFrame({}, [tensorOf('u32', [1, 1], 0)]);
    const at = 8 + 4 + 4; // magic, header length, "{}" padded, count
    const mutate = (f: (b: Uint8Array) => void) => {
      const c = Uint8Array.from(bytes);
      f(c);
      return c;
    };
    expect(fieldOf(() => decodeFrame(mutate((b) => (b[0] = 0)), wide))).toBe('body');
    expect(fieldOf(() => decodeFrame(Uint8Array.of(...bytes, 0, 0, 0, 0), wide))).toBe('body');
    expect(fieldOf(() => decodeFrame(mutate((b) => (b[at] = 9)), wide))).toBe('tensors/0/dtype');
    expect(fieldOf(() => decodeFrame(mutate((b) => (b[at + 1] = 5)), wide))).toBe('tensors/0/shape');
    expect(fieldOf(() => decodeFrame(mutate((b) => (b[at + 4] = 2)), wide))).toBe('tensors/0/data'); // shape [2, 1] with 4 bytes
    expect(new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true)).toBe(FRAME_MAGIC);
  });

  it('refuses what is past its bounds before reading it: bytes, header, tensor count', () => {
    const bytes = encodeFrame({ pad: 'x'.repeat(100) }, [tensorOf('u32', [1, 1], 0), tensorOf('u32', [1, 1], 0)]);
    expect(fieldOf(() => decodeFrame(bytes, { ...wide, maxBytes: bytes.byteLength - 1 }))).toBe('body');
    expect(fieldOf(() => decodeFrame(bytes, { ...wide, maxHeaderBytes: 50 }))).toBe('header');
    expect(fieldOf(() => decodeFrame(bytes, { ...wide, maxTensors: 1 }))).toBe('tensors');
  });
});

describe('decodeStageRequest', () => {
  it('round-trips a stage call, its replay and prompt', () => {
    const request = call({ replay: [tensorOf('f32', [5, 8], 2), tensorOf('f32', [1, 8], 3)], prompt: 'hello' });
    const back = decodeStageRequest(encodeStageRequest(request), 8);
    expect({ ...back, input: [...back.input.data], replay: back.replay.map((t) => t.shape) }).toEqual({ ...request, input: [...request.input.data], replay: [[5, 8], [1, 8]] });
  });

  it('bounds the tensors by the call\'s tokens and the engine\'s width, naming the field', () => {
    expect(fieldOf(() => decodeStageRequest(encodeStageRequest(call({ input: tensorOf('f32', [4, 8], 0) })), 8))).toBe('input'); // 4 tokens in a call of 3
    expect(fieldOf(() => decodeStageRequest(encodeStageRequest(call()), 7))).toBe('input'); // 8 wide, the engine takes 7
    expect(fieldOf(() => decodeStageRequest(encodeStageRequest(call({ replay: [tensorOf('f32', [1, 9], 0)] })), 8))).toBe('replay/0');
    const many = Array.from({ length: STAGE_LIMITS.replay + 1 }, () => digestTensor(1));
    expect(fieldOf(() => decodeStageRequest(encodeStageRequest(call({ input: digestTensor(1), replay: many })), 1))).toBe('replay');
    expect(stageRequestBounds(1024).maxBytes).toBeGreaterThan(4 * 1024 * 1024); // a 1,024-token activation at 1,024 dims fits
  });

  it('refuses header fields out of range, missing or unknown, naming them', () => {
    const withHeader = (h: object) => encodeFrame(h, [digestTensor(1)]);
    const good = { sessionId: 's', modelId: 'm', layerStart: 0, layerEnd: 4, step: 0, fresh: true, tokens: 1 };
    expect(fieldOf(() => decodeStageRequest(withHeader(good), 1))).toBe('no error');
    expect(fieldOf(() => decodeStageRequest(withHeader({ ...good, tokens: STAGE_LIMITS.tokens + 1 }), 1))).toBe('tokens');
    expect(fieldOf(() => decodeStageRequest(withHeader({ ...good, fresh: 'yes' }), 1))).toBe('fresh');
    expect(fieldOf(() => decodeStageRequest(withHeader({ ...good, sessionId: '' }), 1))).toBe('sessionId');
    expect(fieldOf(() => decodeStageRequest(withHeader({ ...good, extra: 1 }), 1))).toBe('extra');
    expect(fieldOf(() => decodeStageRequest(encodeFrame(good, []), 1))).toBe('input');
  });
});

describe('signed replies', () => {
  const secret = new TextEncoder().encode('reply-secret');
  const request = { audience: 'agent/a1', method: 'POST', path: '/v1/stage', nonce: 'a'.repeat(32) };
  const body = encodeFrame({ ok: 1 }, [digestTensor(5)]);
  const headersOf = (h: Record<string, string>) => ({ get: (name: string) => h[name] });
  it('holds for the reply to this request, and is refused for another body, nonce, agent, secret, or a stale stamp', () => {
    const h = replySignatureHeaders(secret, { ...request, timestamp: 1000, body });
    expect(checkReplySignature(secret, request, headersOf(h), body, 1000)).toBeUndefined();
    expect(checkReplySignature(secret, request, headersOf(h), encodeFrame({ ok: 1 }, [digestTensor(6)]), 1000)).toMatch(/does not match/);
    expect(checkReplySignature(secret, { ...request, nonce: 'b'.repeat(32) }, headersOf(h), body, 1000)).toMatch(/does not match/);
    expect(checkReplySignature(secret, { ...request, audience: 'agent/a2' }, headersOf(h), body, 1000)).toMatch(/does not match/);
    expect(checkReplySignature(new TextEncoder().encode('other'), request, headersOf(h), body, 1000)).toMatch(/does not match/);
    expect(checkReplySignature(secret, request, headersOf(h), body, 1000 + 60_000)).toMatch(/away from this host's clock/);
    expect(checkReplySignature(secret, request, headersOf({}), body, 1000)).toMatch(/not signed/);
  });
});
