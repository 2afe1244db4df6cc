/**
 * Admission and the prefix-cache index (docs/prefix-cache.md, "Admission"): a prompt enters the
 * index only when its route is leased. A request that waits, is woken and routed again, then
 * aborts, leaves nothing behind; an admitted lease's `release(…, { cachedTokens })` corrects the
 * estimate as `route(…, { reserve: true })`'s does.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, swarmConfig, type NodeProfile } from '../../src/index.js';
import { prefixCache } from '../../src/prefix/index.js';

const nodes: NodeProfile[] = [{ id: 'a', memoryGb: 8, score: 2, latencyMs: 10, slots: 1 }];
const system = 'You are a careful assistant. Answer in one sentence. '.repeat(40);

describe('admit with a prompt', () => {
  it('records a waiting prompt only once leased: an aborted waiter leaves no entry, however often it was routed', async () => {
    const swarm = createSwarm(nodes, swarmConfig(4, 1), { seed: 1, prefixCache: prefixCache() });
    const holder = await swarm.admit({ prompt: 'the one that holds the slot' });
    const blocksBefore = swarm.prefixStats().blocks;
    const requestsBefore = swarm.prefixStats().requests;
    const abort = new AbortController();
    const waiting = swarm.admit({ prompt: system + 'never served' }, { signal: abort.signal });
    for (let i = 0; i < 5; i++) swarm.markAlive('a'); // wakes the queue: the waiter is routed again, still no room
    await Promise.resolve();
    abort.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'Aborted' });
    expect(swarm.prefixStats()).toMatchObject({ blocks: blocksBefore, requests: requestsBefore });
    // The next prompt sharing the system prompt finds nothing cached.
    swarm.release(holder.lease);
    const next = await swarm.admit({ prompt: system + 'served' });
    expect(next.cachedTokens).toBe(0);
    swarm.release(next.lease);
    swarm.stop();
  });

  it('records an admitted prompt while another model\'s request waits (routing the waiter first)', async () => {
    const two: NodeProfile[] = ['a', 'b', 'c', 'd'].map((id, i) => ({ id, memoryGb: 8, score: 2, latencyMs: 10, slots: i < 2 ? 1 : 4 }));
    const swarm = createSwarm(two, { models: [{ id: 'x', layers: 4, pipelines: 2 }, { id: 'y', layers: 4, pipelines: 2 }] }, { seed: 1, prefixCache: prefixCache() });
    const xs = swarm.state().plan.pipelines.filter((p) => p.modelId === 'x').length;
    for (let i = 0; i < xs; i++) await swarm.admit({ model: 'x', prompt: `${i}` });
    void swarm.admit({ model: 'x', prompt: 'waits' }).catch(() => undefined); // every x copy is full
    expect(swarm.saturation().queued).toBe(1);
    const first = await swarm.admit({ model: 'y', prompt: system + 'one' });
    expect(first.cachedTokens).toBe(0); // recorded: without the fix it was left unrecorded (undefined)
    const again = await swarm.admit({ model: 'y', prompt: system + 'one' });
    expect(again.cachedTokens).toBeGreaterThan(0);
    swarm.stop();
  });

  it('corrects the estimate with an admitted lease\'s report, as for a reserved route', async () => {
    const swarm = createSwarm(nodes, swarmConfig(4, 1), { seed: 1, prefixCache: prefixCache() });
    const first = await swarm.admit({ prompt: system + 'one' });
    swarm.release(first.lease, { cachedTokens: 0 });
    const second = await swarm.admit({ prompt: system + 'two' });
    expect(second.cachedTokens).toBeGreaterThan(0);
    swarm.release(second.lease, { cachedTokens: 16 });
    expect(swarm.prefixStats()).toMatchObject({ requests: 2, reports: 2, reportedTokens: 16 });
    swarm.stop();
  });
});
