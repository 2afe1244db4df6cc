/**
 * The held-out prefix workloads H1 and H2 and the targets' runner (docs/prefix-cache.md,
 * "Held-out workloads"): their shapes as the issue fixed them, the engine's slots, the frozen
 * baselines' bytes, and a scaled-down run that repeats its bytes and reports every cell.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { H1, H2, heldoutBursts, heldoutTopology, heldoutZipf, roundRobinCapacity } from '../../src/sim/load/heldout-workloads.js';
import { runTargets } from '../../src/sim/load/heldout-sim.js';
import { blockHashes } from '../../src/sim/load/block-cache.js';
import { runPrefixEngine } from '../../src/sim/load/prefix-engine.js';
import { PREFILL_MS_PER_TOKEN } from '../../src/sim/load/prefix-constants.js';
import type { PromptRequest } from '../../src/sim/load/prefix-workloads.js';
import type { SimStage } from '../../src/sim/load/load-topology.js';

describe('H1 and H2', () => {
  it('H1: six single-stage copies of one slot, two twice as fast, Poisson at 0.85 of round-robin\'s capacity, Zipf(1.1) over 64 groups of 4,096 + 256 tokens', () => {
    const t = heldoutTopology(heldoutZipf);
    expect(t.pipelines).toHaveLength(6);
    expect(t.pipelines.every((p) => p.stages.length === 1 && p.stages[0]?.layers === 32)).toBe(true);
    expect(t.nodes.map((n) => n.score).sort()).toEqual([1, 1, 1, 1, 2, 2]);
    expect(t.nodes.every((n) => n.slots === 1)).toBe(true);
    const rate = heldoutZipf.ratePerS(t);
    // round-robin holds while the slowest copy does: 6 × 1 ÷ (4,352 prefill + 128 decode tokens' time)
    expect(rate).toBeCloseTo(0.85 * roundRobinCapacity(t, 4352, 128), 9);
    expect(rate).toBeCloseTo((0.85 * 6 * 1000) / (4352 * 0.01697 + 128 * 0.01835), 6);
    const w = heldoutZipf.build(1, rate);
    expect(w.requests).toHaveLength(H1.requests);
    expect(w.requests.every((r) => r.ids.length === 4096 + 256 && r.outTokens === 128)).toBe(true);
    const counts = new Array<number>(64).fill(0);
    for (const r of w.requests) counts[r.group] = (counts[r.group] ?? 0) + 1;
    // Zipf(1.1): the first rank about 1 ÷ H(64, 1.1) of the traffic, twice the second's share
    const h = Array.from({ length: 64 }, (_, k) => 1 / (k + 1) ** 1.1).reduce((a, b) => a + b, 0);
    expect((counts[0] as number) / w.requests.length).toBeCloseTo(1 / h, 1);
    expect((counts[0] as number) / (counts[1] as number)).toBeGreaterThan(1.6);
  });

  it('H2: four copies of four slots; arrivals only in 2 s bursts every 6 s, at three times the mean rate inside them', () => {
    const t = heldoutTopology(heldoutBursts);
    expect(t.pipelines).toHaveLength(4);
    expect(t.nodes.every((n) => n.slots === 4)).toBe(true);
    const rate = heldoutBursts.ratePerS(t);
    expect(rate).toBeCloseTo((0.85 * 16 * 1000) / (2176 * 0.01697 + 128 * 0.01835), 6);
    const w = heldoutBursts.build(1, rate);
    expect(w.requests).toHaveLength(H2.requests);
    const seconds = w.requests.map((r) => r.at / rate);
    expect(seconds.every((s) => s % 6 < 2)).toBe(true);
    const inFirst = seconds.filter((s) => s < 2).length;
    expect(inFirst / 2 / rate).toBeGreaterThan(2.8);
    expect(inFirst / 2 / rate).toBeLessThan(3.2);
    expect(new Set(w.requests.map((r) => r.group)).size).toBe(16);
    expect(w.requests.every((r) => r.ids.length === 2048 + 128)).toBe(true);
  });

  it('a node of 4 slots serves 4 requests at once, the fifth waits', () => {
    const t = heldoutTopology(heldoutBursts);
    const prompt = (k: number): PromptRequest => {
      const ids = Uint32Array.from({ length: 160 }, (_, i) => k * 1000 + i);
      return { at: 0, ids, blocks: blockHashes(ids), fullBlocks: blockHashes(ids), fullIds: ids, outTokens: 0, group: k };
    };
    const clock = { t: 0 };
    const stages = (t.pipelines[0] as { stages: readonly SimStage[] }).stages;
    const trace = runPrefixEngine({ topology: t, workload: { id: 'x', label: 'x', requests: [0, 1, 2, 3, 4].map(prompt) }, ratePerS: 1, clock, router: () => ({ pick: () => ({ pipeline: 0, stages }), first() {}, done() {}, telemetry() {} }) });
    const one = 2 + 160 * PREFILL_MS_PER_TOKEN;
    expect(Array.from(trace.ttft.slice(0, 4)).every((x) => Math.abs(x - one) < 1e-9)).toBe(true);
    expect(trace.ttft[4]).toBeCloseTo(one + 160 * PREFILL_MS_PER_TOKEN, 9);
  });
});

describe('the frozen baselines', () => {
  it('keep their bytes: round-robin, SGLang, GIE and Dynamo as at be04daf (prefix-baselines.ts)', () => {
    const text = readFileSync(new URL('../../src/sim/load/prefix-baselines.ts', import.meta.url), 'utf8');
    expect(createHash('sha256').update(text).digest('hex')).toBe('1deee32e4a75ea7c7f10f00bac4485d3cb5270068af922d84b371d48007652d9');
    expect(text).not.toMatch(/from '\.\.\/\.\.\/prefix\//); // nothing of the library's router
  });
});

describe('the targets', () => {
  it('runs H1, H2 and W7 scaled down, repeats its bytes, and reports every cell for ours with slots and without', () => {
    const options = { seeds: 1, scale: 0.015, searchSteps: 1, workloads: ['h1-zipf-hetero', 'h2-on-off', 'w7a-shared-prefix'] };
    const a = runTargets(options);
    expect(JSON.stringify(runTargets(options))).toBe(JSON.stringify(a));
    expect(a.workloads.map((w) => w.workload)).toEqual(['h1-zipf-hetero', 'h2-on-off', 'w7a-shared-prefix']);
    expect(a.workloads.every((w) => w.policies.map((p) => p.policy).join() === 'round-robin,sglang-cache-aware,gie-scorers,dynamo-kv,ours,ours-slots')).toBe(true);
    // two p99 cells per workload (ours, ours-slots), and W7a's two throughput cells
    expect(a.cells).toHaveLength(8);
    expect(a.cells.filter((c) => c.measure === 'throughput ÷ SGLang').map((c) => c.policy)).toEqual(['ours', 'ours-slots']);
    expect(a.cells.filter((c) => c.workload.startsWith('h')).every((c) => c.limit === 1.1)).toBe(true);
  });
});
