import { describe, expect, it } from 'vitest';
import { AGENT_BLOCK_CHARS, AGENT_BLOCK_TOKENS, AgentPrefixCache } from '../../src/agent/engines/digest-prefix-cache.js';
import { checkStageReply } from '../../src/orchestrator/stage-reply.js';
import type { StageRequest } from '../../src/wire/stage-protocol.js';
import { encodeFrame } from '../../src/wire/frames.js';
import { digestTensor } from '../../src/wire/digest.js';

const text = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`.padEnd(8, '.')).join('').slice(0, n);

describe('AgentPrefixCache', () => {
  it('finds the longest cached run of leading blocks, per model and layer range', () => {
    const cache = new AgentPrefixCache(10);
    const shared = text(10 * AGENT_BLOCK_CHARS, 's');
    expect(cache.serve('m', 0, 4, 8, `${shared}one`, 200)).toBe(0);
    expect(cache.serve('m', 0, 4, 8, `${shared}two`, 200)).toBe(10 * AGENT_BLOCK_TOKENS);
    expect(cache.serve('m', 4, 8, 8, `${shared}two`, 200)).toBe(0); // other layers: other entries
    expect(cache.serve('other', 0, 4, 8, `${shared}two`, 200)).toBe(0);
    expect(cache.serve('m', 0, 4, 8, `${shared}two`, 100)).toBe(100); // never more than the call's tokens
  });

  it('evicts the least recently used once the blocks would take more than its KV memory', () => {
    // A block of 16 tokens over 4 of 8 layers at 0.000128 GB a token: 0.001024 GB; room for 20.
    const cache = new AgentPrefixCache(20 * 0.001024 + 1e-9);
    const a = text(16 * AGENT_BLOCK_CHARS, 'a');
    const b = text(16 * AGENT_BLOCK_CHARS, 'b');
    cache.serve('m', 0, 4, 8, a, 1000);
    cache.serve('m', 0, 4, 8, b, 1000);
    expect(cache.size).toBe(20);
    expect(cache.usedGb).toBeLessThanOrEqual(cache.capacityGb);
    expect(cache.serve('m', 0, 4, 8, b, 1000)).toBe(16 * AGENT_BLOCK_TOKENS); // b, the newest, is whole
    expect(cache.serve('m', 0, 4, 8, a, 1000)).toBe(0); // a's head went first
  });
});

describe('checkStageReply cachedTokens', () => {
  const call: StageRequest = { sessionId: 's', modelId: 'm', layerStart: 0, layerEnd: 4, step: 0, fresh: true, tokens: 100, input: digestTensor(1), replay: [], prompt: 'x' };
  const reply = (extra: object) => encodeFrame({ nodeId: 'n1', layerStart: 0, layerEnd: 4, ms: 1, ...extra }, [digestTensor(5)]);
  it('keeps a report within the call tokens and refuses others, naming the field', () => {
    expect(checkStageReply(reply({ cachedTokens: 64 }), 'n1', call).cachedTokens).toBe(64);
    expect(checkStageReply(reply({}), 'n1', call).cachedTokens).toBeUndefined();
    for (const bad of [-1, 101, 1.5, '3']) expect(() => checkStageReply(reply({ cachedTokens: bad }), 'n1', call)).toThrow(/cachedTokens/);
  });
});
