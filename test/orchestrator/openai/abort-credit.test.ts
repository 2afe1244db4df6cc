/**
 * A client that leaves the OpenAI door says nothing of the agent: its lease is released neutral,
 * not as a success (proof of life, the node's failure count cleared), as sessions release an abort.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm } from '../../../src/runtime/create-swarm.js';
import { runCompletion } from '../../../src/orchestrator/openai/completion-run.js';
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
