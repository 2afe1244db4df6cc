/**
 * A client that leaves the OpenAI door says nothing of the agent: its lease is released neutral,
 * not as a success (proof of life, the node's failure count cleared), as sessions release an abort.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm } from '../../../src/runtime/create-swarm.js';
import { runCompletion } from '../../../src/orchestrator/openai/upstream-completion.js';
import type { NodeRegistry } from '../../../src/orchestrator/node-registry.js';

describe('a client that leaves the OpenAI door', () => {
  it('is no proof of life for the agent that had not answered: its failure count stays', async () => {
    const swarm = createSwarm([{ id: 'u0', memoryGb: 8, score: 1, latencyMs: 5 }], { models: [{ id: 'm', layers: 4, pipelines: 1 }] });
    for (let i = 0; i < 3; i++) swarm.release(swarm.route({}, { reserve: true }).lease, { ok: false, failedNode: 'u0' });
    expect(swarm.node('u0')?.failures).toBe(3);
    const registry = new Map([['u0', { url: 'http://u0.invalid', inflight: 0 }]]) as unknown as NodeRegistry;
    const client = new AbortController();
    // The agent never answers; the client leaves.
    const post = (_u: string, _b: unknown, signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    const clock = { now: () => Date.now(), setTimeout: (f: () => void, ms: number) => setTimeout(f, ms), clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout) };
    const run = runCompletion({ swarm, registry, clock, post: post as never, affinity: 'hi', priority: 0, deadlineMs: undefined, signal: client.signal }, { chat: false, model: 'm', prompt: 'hi', messages: undefined, maxTokens: 4, stop: [], stream: false, includeUsage: false, sampling: {} }, () => {});
    setTimeout(() => client.abort(new Error('client left')), 10);
    await expect(run).rejects.toThrow('client left');
    expect(swarm.node('u0')?.failures).toBe(3);
    swarm.stop?.();
  });
});

describe("an agent's error answer", () => {
  it('is busy, not failed, when its code Full comes after the 500 characters told (and only 64 KB of it is read)', async () => {
    const swarm = createSwarm([{ id: 'u0', memoryGb: 8, score: 1, latencyMs: 5 }, { id: 'u1', memoryGb: 8, score: 1, latencyMs: 5 }], { models: [{ id: 'm', layers: 4, pipelines: 2 }] });
    const registry = new Map([['u0', { url: 'http://u0.invalid', inflight: 0 }], ['u1', { url: 'http://u1.invalid', inflight: 0 }]]) as unknown as NodeRegistry;
    const asked: { node: string; limit?: number }[] = [];
    const full = JSON.stringify({ error: { message: `every slot taken: ${'x'.repeat(600)}`, code: 'Full' } });
    const sse = ['data: {"choices":[{"text":"ok","finish_reason":null}]}\n\n', 'data: {"choices":[{"text":"","finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n'];
    const post = async (url: string) => {
      const node = url.startsWith('http://u0') ? 'u0' : 'u1';
      const first = asked.length === 0;
      asked.push({ node });
      if (first) return { status: 503, ok: false, text: async () => full, json: async () => JSON.parse(full), arrayBuffer: async () => new ArrayBuffer(0), bytes: async (limit: number) => ((asked.at(-1) as { limit?: number }).limit = limit, Buffer.from(full)) };
      return { status: 200, ok: true, text: async () => '', json: async () => ({}), arrayBuffer: async () => new ArrayBuffer(0), chunks: (async function* () { for (const e of sse) yield Buffer.from(e); })() };
    };
    const clock = { now: () => Date.now(), setTimeout: (f: () => void, ms: number) => setTimeout(f, ms), clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout) };
    let text = '';
    const outcome = await runCompletion({ swarm, registry, clock, post: post as never, affinity: 'hi', priority: 0, deadlineMs: undefined, signal: new AbortController().signal, backoffMs: 1 }, { chat: false, model: 'm', prompt: 'hi', messages: undefined, maxTokens: 4, stop: [], stream: true, includeUsage: false, sampling: {} }, (t) => (text += t));
    const busy = asked[0]?.node as string;
    expect(asked.map((a) => a.node)).toEqual([busy, busy === 'u0' ? 'u1' : 'u0']);
    expect(asked[0]?.limit).toBe(64 * 1024);
    expect(text).toBe('ok');
    expect(outcome.nodes).toEqual([busy === 'u0' ? 'u1' : 'u0']);
    expect(swarm.node(busy)?.failures, 'a busy agent is not a failed one').toBe(0);
    swarm.stop?.();
  });
});
