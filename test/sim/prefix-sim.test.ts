import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlockCache, blockHashes } from '../../src/sim/load/block-cache.js';
import { buildTopology, type SimStage } from '../../src/sim/load/load-topology.js';
import { BLOCK_TOKENS, DECODE_MS_PER_TOKEN, PREFILL_MS_PER_TOKEN, W7_TOPOLOGY } from '../../src/sim/load/prefix-constants.js';
import { runPrefixEngine } from '../../src/sim/load/prefix-engine.js';
import { roundRobin, sglangCacheAware } from '../../src/sim/load/prefix-policies.js';
import type { PrefixPolicy } from '../../src/sim/load/prefix-router.js';
import { runPrefixSim } from '../../src/sim/load/prefix-sim.js';
import { oursPrefix } from '../../src/sim/load/prefix-swarm-policy.js';
import type { PrefixWorkload, PromptRequest } from '../../src/sim/load/prefix-workloads.js';

const ids = (n: number, from: number) => Uint32Array.from({ length: n }, (_, i) => from + i);
function req(at: number, prompt: Uint32Array, out = 16): PromptRequest {
  const full = new Uint32Array(prompt.length + out);
  full.set(prompt);
  full.set(ids(out, 900_000), prompt.length);
  return { at, ids: prompt, blocks: blockHashes(prompt), fullBlocks: blockHashes(full), fullIds: full, outTokens: out, group: 0 };
}

describe('BlockCache', () => {
  it('matches the longest held prefix and evicts the least recently used beyond its capacity', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 60 }), (capacity, n) => {
        const cache = new BlockCache(capacity);
        const a = blockHashes(ids(n * BLOCK_TOKENS, 1));
        cache.insert(a);
        expect(cache.size).toBe(Math.min(capacity, n));
        // The newest blocks stay: the chain's head survives only when it all fits.
        expect(cache.peek(a)).toBe(n <= capacity ? n : 0);
      }),
      { seed: 7, numRuns: 100 },
    );
  });
  it('hashes blocks in a chain: equal prefixes share their leading hashes only', () => {
    const a = blockHashes(ids(64, 1));
    const b = blockHashes(Uint32Array.from([...ids(32, 1), ...ids(32, 500)]));
    expect(Array.from(b.slice(0, 2))).toEqual(Array.from(a.slice(0, 2)));
    expect(b[2]).not.toBe(a[2]);
  });
});

describe('the prefix engine', () => {
  const topology = buildTopology(W7_TOPOLOGY);
  const alwaysFirst: PrefixPolicy = { id: 'first', label: 'first copy', create: ({ topology: t }) => ({ pick: () => ({ pipeline: 0, stages: (t.pipelines[0] as { stages: readonly SimStage[] }).stages }), first() {}, done() {}, telemetry() {} }) };
  it('charges prefill for uncached tokens on every stage, and nothing for cached ones', () => {
    const system = ids(2048, 1);
    const workload: PrefixWorkload = { id: 'two', label: 'two', requests: [req(0, Uint32Array.from([...system, ...ids(128, 10_000)])), req(1, Uint32Array.from([...system, ...ids(128, 20_000)]))] };
    const clock = { t: 0 };
    // One request a second: the first has finished when the second comes.
    const trace = runPrefixEngine({ topology, workload, ratePerS: 1, clock, router: (truth) => alwaysFirst.create({ topology, truth, clock: { now: () => clock.t }, seed: 1, rng: { next: () => 0, int: () => 0, exp: () => 0 } as never }) });
    const hops = 3 * topology.spec.hopMs; // client → stage 1 → stage 2 → client
    expect(trace.ttft[0]).toBeCloseTo(hops + 2176 * PREFILL_MS_PER_TOKEN, 6);
    expect(trace.cached[0]).toBe(0);
    expect(trace.cached[1]).toBe(2048);
    expect(trace.ttft[1]).toBeCloseTo(hops + 128 * PREFILL_MS_PER_TOKEN, 6);
    expect(DECODE_MS_PER_TOKEN).toBeGreaterThan(0);
  });
});

describe('W7', () => {
  it('runs every workload deterministically, scaled down, and affinity beats round-robin on shared prefixes', () => {
    const options = { seeds: 1, scale: 0.06, searchSteps: 2, policies: [roundRobin, oursPrefix, sglangCacheAware] };
    const a = runPrefixSim(options);
    const b = runPrefixSim(options);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    const w7a = a.workloads.find((w) => w.workload === 'w7a-shared-prefix');
    const hit = (p: string) => w7a?.policies.find((x) => x.policy === p)?.median.hitRate ?? NaN;
    expect(hit('sglang-cache-aware')).toBeGreaterThan(hit('round-robin'));
    expect(a.workloads.map((w) => w.workload)).toEqual(['w7a-shared-prefix', 'w7b-multi-turn', 'w7c-little-sharing', 'w7d-skew']);
  });
});
