/**
 * The prefix cache on a swarm (docs/prefix-cache.md): a prompt prefers the copy holding it, the
 * estimate and its correction, opting out, the imbalance guard, the lifecycle (down, growth,
 * retirement), and `costModel: 'original'` unchanged by a prompt; the plug-in's options and a
 * swarm without it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSwarm, ManualClock, RoutingError, swarmConfig, SwarmError, type NodeProfile, type Route, type SwarmConfig, type SwarmRequest } from '../../src/index.js';
import { persistSwarm, restoreSwarm } from '../../src/persistence/index.js';
import { prefixCache, type PrefixCacheOptions } from '../../src/prefix/index.js';

/** The plug-in with its defaults (each swarm gets its own index). */
const on = { seed: 1, prefixCache: prefixCache() };
/** Affinity and fill placement off: every choice by the cost (its tokens term). */
const costOnly = { seed: 1, prefixCache: prefixCache({ cacheThreshold: 1, placement: 'cost' }) };

const equal = (n: number, memoryGb = 8): NodeProfile[] => Array.from({ length: n }, (_, i) => ({ id: `n${i}`, memoryGb, score: 2, latencyMs: 10 }));
const system = 'You are a careful assistant. Answer in one sentence. '.repeat(40); // 2,120 characters: 33 whole blocks
const ask = (q: string) => system + q;

describe('routing with a prompt', () => {
  it('sends a prompt sharing a prefix to the copy that served it, and says how much it holds', () => {
    const swarm = createSwarm(equal(4), swarmConfig(4, 4), on);
    const first = swarm.route({ prompt: ask('What is a copy?') });
    expect(first.cachedTokens).toBe(0);
    const next = swarm.route({ prompt: ask('What is a plan?') });
    expect(next.pipelineId).toBe(first.pipelineId);
    expect(next.cachedTokens).toBe(33 * 16);
    // priced: the uncached tokens at the original price, the cached at a tenth of it
    const tokens = Math.ceil(ask('What is a plan?').length / 4);
    const plain = swarm.route({ tokens, model: 'base' });
    expect(next.cost).toBeCloseTo(plain.cost - (10 * 0.9 * 528) / 1024, 9);
    expect(swarm.prefixStats()).toMatchObject({ requests: 2, estimatedTokens: 528, blocks: 33 }); // the questions end in partial blocks
    swarm.stop();
  });

  it('defaults tokens to ⌈characters ÷ 4⌉ or the ids, and counts token-id prompts in ids', () => {
    const swarm = createSwarm(equal(2), swarmConfig(4, 2), on);
    const ids = Array.from({ length: 100 }, (_, i) => i);
    swarm.route({ prompt: ids });
    const again = swarm.route({ prompt: [...ids, 7, 7, 7] });
    expect(again.cachedTokens).toBe(96);
    expect(swarm.route({ prompt: 'abcde', cache: false }).cost).toBe(swarm.route({ tokens: 2 }).cost);
    swarm.stop();
  });

  it('cache: false neither reads nor learns; without the plug-in a prompt only sets tokens', () => {
    const swarm = createSwarm(equal(2), swarmConfig(4, 2), on);
    const r = swarm.route({ prompt: ask('a'), cache: false });
    expect(r.cachedTokens).toBeUndefined();
    expect(swarm.route({ prompt: ask('b') }).cachedTokens).toBe(0);
    expect(swarm.prefixStats().requests).toBe(1);
    swarm.stop();
    const off = createSwarm(equal(2), swarmConfig(4, 2), { seed: 1 });
    const lease = off.route({ prompt: ask('a') }, { reserve: true }).lease;
    const again = off.route({ prompt: ask('a') });
    expect(again.cachedTokens).toBeUndefined();
    expect(again.cost).toBe(off.route({ tokens: Math.ceil(ask('a').length / 4) }).cost);
    off.release(lease, { cachedTokens: 100 }); // accepted, ignored
    expect(() => off.release(lease, { cachedTokens: 1 })).toThrow(SwarmError); // released once
    expect(off.prefixStats()).toEqual({ requests: 0, promptTokens: 0, estimatedTokens: 0, reports: 0, reportedTokens: 0, reportedEstimate: 0, guarded: 0, blocks: 0 });
    off.stop();
  });

  it('refuses a bad prompt, cache flag, config or reported cachedTokens with a typed error naming the field', () => {
    const swarm = createSwarm(equal(2), swarmConfig(4, 2), on);
    expect(() => swarm.route({ prompt: [1, -2] })).toThrow(RoutingError);
    expect(() => swarm.route({ prompt: 5 } as unknown as SwarmRequest)).toThrow(/"prompt"/);
    expect(() => swarm.route({ cache: 'no' } as unknown as SwarmRequest)).toThrow(/"cache"/);
    const leased = swarm.route({ prompt: ask('x') }, { reserve: true });
    expect(() => swarm.release(leased.lease, { cachedTokens: 1.5 })).toThrow(/"cachedTokens"/);
    expect(() => swarm.release(leased.lease, { cachedTokens: -1 })).toThrow(SwarmError);
    swarm.release(leased.lease, { cachedTokens: 0 }); // the refused calls left it open
    expect(swarm.prefixStats()).toMatchObject({ reports: 1, reportedTokens: 0 });
    swarm.stop();
    expect(() => prefixCache({ textBlockChars: 0 })).toThrow(/prefixCache option "textBlockChars"/);
    expect(() => prefixCache({ blocks: 3 } as unknown as PrefixCacheOptions)).toThrow(/prefixCache option "blocks" is unknown/);
    expect(() => prefixCache(false as unknown as PrefixCacheOptions)).toThrow(SwarmError);
    // The settings moved from the config to the plug-in: the old field is refused, naming the new way.
    expect(() => createSwarm(equal(2), { ...swarmConfig(4, 2), prefixCache: {} } as unknown as SwarmConfig, { seed: 1 })).toThrow(/config "prefixCache".*hecate-swarm\/prefix/);
    expect(() => createSwarm(equal(2), swarmConfig(4, 2), { prefixCache: { tokenWeight: 1 } } as never)).toThrow(/option "prefixCache" must be what prefixCache\(options\)/);
    expect(() => createSwarm(equal(2), { models: [{ id: 'base', layers: 4, pipelines: 2, kvGbPerToken: 0 }] }, { seed: 1 })).toThrow(/kvGbPerToken/);
  });

  it('affinity: a request goes to the copy holding its prefix though load prefers another, until the guard trips', () => {
    const swarm = createSwarm(equal(2), swarmConfig(4, 2), on);
    const held = swarm.route({ prompt: ask('0') }, { reserve: true }); // in flight on its copy: load prefers the other
    expect(swarm.route({ tokens: 528 }).pipelineId).not.toBe(held.pipelineId);
    const next = swarm.route({ prompt: ask('1') });
    expect(next.pipelineId).toBe(held.pipelineId); // 528 of 530 tokens held: over cacheThreshold 0.3
    expect(next.cachedTokens).toBe(528);
    const short = swarm.route({ prompt: ask('2') + 'x'.repeat(5_000) }); // 528 of 1,780 tokens held: under it, placed by fill
    expect(short.pipelineId).not.toBe(held.pipelineId); // the other copy has taken no new prompt tokens yet
    expect(short.cachedTokens).toBe(0);
    swarm.stop();
  });

  it('places new prompts on the least-filled copy: spread by the tokens they bring, in proportion to the KV memory', () => {
    const swarm = createSwarm(equal(4), swarmConfig(4, 4), on);
    const prompt = (i: number) => `${i}:`.padEnd(2_048, String(i % 10)); // 512 tokens, no block shared
    const counts = new Map<string, number>();
    for (let i = 0; i < 8; i++) {
      const r = swarm.route({ prompt: prompt(i) }, { reserve: true }); // reserved: load alone would avoid the copies in use
      counts.set(r.pipelineId, (counts.get(r.pipelineId) ?? 0) + 1);
    }
    expect([...counts.values()]).toEqual([2, 2, 2, 2]);
    swarm.stop();
    // Twice the KV memory takes twice the new prompts: a node of 16 GB beside one of 8 (4 layers of 1 GB each).
    const mixed = createSwarm([{ id: 'big', memoryGb: 16, score: 2, latencyMs: 10 }, { id: 'small', memoryGb: 8, score: 2, latencyMs: 10 }], swarmConfig(4, 2), on);
    const byNode = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      const r = mixed.route({ prompt: prompt(i) });
      const node = r.stages[0]?.nodeId as string;
      byNode.set(node, (byNode.get(node) ?? 0) + 1);
    }
    const big = byNode.get('big') ?? 0;
    const small = byNode.get('small') ?? 0;
    expect(big / small).toBeGreaterThan(2.5); // (16 − 4) ÷ (8 − 4) = 3 × the KV memory
    expect(big / small).toBeLessThan(3.5);
    mixed.stop();
  });

  it('fill counts the prompt\'s own size: tokens 0 or 10¹² neither pin nor stall placement; copies without KV memory take turns', () => {
    const prompt = (i: number) => `${i}:`.padEnd(2_048, String(i % 10));
    const spread = (memoryGb: number, tokens?: number) => {
      const swarm = createSwarm(equal(4, memoryGb), swarmConfig(4, 4), on);
      const counts = new Map<string, number>();
      for (let i = 0; i < 40; i++) {
        const r = swarm.route({ prompt: prompt(i), ...(tokens !== undefined ? { tokens } : {}) }, { reserve: true });
        counts.set(r.pipelineId, (counts.get(r.pipelineId) ?? 0) + 1);
      }
      swarm.stop();
      return [...counts.values()];
    };
    expect(spread(8, 0)).toEqual([10, 10, 10, 10]);
    expect(spread(8, 1e12)).toEqual([10, 10, 10, 10]);
    expect(spread(4)).toEqual([10, 10, 10, 10]); // 4 layers of 1 GB on 4 GB: no KV memory at all
  });

  it('a copy back from down takes its turn of new prompts, not every one until it catches up', () => {
    const swarm = createSwarm(equal(4), swarmConfig(4, 4), on);
    const prompt = (i: number) => `${i}:`.padEnd(2_048, String(i % 10));
    let i = 0;
    for (; i < 40; i++) swarm.route({ prompt: prompt(i) });
    swarm.markDown('n0');
    for (; i < 340; i++) swarm.route({ prompt: prompt(i) });
    swarm.markAlive('n0');
    const next = Array.from({ length: 8 }, () => swarm.route({ prompt: prompt(i++) }).stages[0]?.nodeId);
    expect(next.filter((n) => n === 'n0')).toHaveLength(2);
    swarm.stop();
  });

  it('the count guard (guard: "count"): without it a shared prompt would pile onto the cached copy; with it a burst held at once spreads past balanceAbs', () => {
    const burst = (options?: PrefixCacheOptions) => {
      const swarm = createSwarm(equal(2, 16), swarmConfig(4, 2), { seed: 1, prefixCache: prefixCache({ guard: 'count', ...options }) });
      const counts = new Map<string, number>();
      for (let i = 0; i < 150; i++) {
        const r = swarm.route({ prompt: ask(String(i)) }, { reserve: true });
        counts.set(r.pipelineId, (counts.get(r.pipelineId) ?? 0) + 1);
      }
      const guarded = swarm.prefixStats().guarded;
      swarm.stop();
      return { counts: [...counts.values()].sort((a, b) => a - b), guarded };
    };
    const guarded = burst();
    expect(guarded.counts).toHaveLength(2);
    expect((guarded.counts[1] as number) - (guarded.counts[0] as number)).toBeLessThanOrEqual(65); // balanceAbs 64, plus the request that tips it
    expect(guarded.guarded).toBeGreaterThan(0);
    const unguarded = burst({ balanceAbs: 1_000 });
    expect(unguarded.counts).toEqual([150]); // all on the copy that served the first
    const tight = burst({ balanceAbs: 2 });
    expect((tight.counts[1] as number) - (tight.counts[0] as number)).toBeLessThanOrEqual(3);
  });

  it('below the affinity threshold, weights.tokens scales the cached saving (the scan path): a reserved copy keeps a prompt it holds', () => {
    const swarm = createSwarm(equal(2), swarmConfig(4, 2), costOnly);
    const held = swarm.route({ prompt: ask('0') }, { reserve: true }); // in flight on its copy
    const weighted = swarm.route({ prompt: ask('1'), weights: { tokens: 20 } });
    expect(weighted.pipelineId).toBe(held.pipelineId); // 20 × the saving (4.6) is more than a reservation (30)
    expect(weighted.cachedTokens).toBe(528);
    const plain = swarm.route({ prompt: ask('2') });
    expect(plain.pipelineId).not.toBe(held.pipelineId); // the default saving is less
    expect(plain.cachedTokens).toBe(0);
    swarm.stop();
  });

  it('prefixCache({ tokenWeight }) scales the same saving for the whole swarm, on the routing index', () => {
    const swarm = createSwarm(equal(2), swarmConfig(4, 2), { seed: 1, prefixCache: prefixCache({ tokenWeight: 20, cacheThreshold: 1, placement: 'cost' }) });
    const held = swarm.route({ prompt: ask('0') }, { reserve: true });
    const next = swarm.route({ prompt: ask('1') });
    expect(next.pipelineId).toBe(held.pipelineId);
    expect(next.cachedTokens).toBe(528);
    swarm.stop();
  });

  it('corrects its estimate from the copy\'s report: a copy that evicts sooner is trusted with less', () => {
    const swarm = createSwarm(equal(1, 4.2), swarmConfig(4, 1), on); // 0.2 GB of KV: 1,562 tokens
    const prompts = Array.from({ length: 6 }, (_, i) => `${i}:${'q'.repeat(800)}`); // 12 blocks each
    for (const p of prompts.slice(0, 3)) swarm.route({ prompt: p });
    const r = swarm.route({ prompt: prompts[0] as string }, { reserve: true });
    expect(r.cachedTokens).toBe(192);
    swarm.release(r.lease, { cachedTokens: 0 }); // it had none of it: it holds less than the index thought
    expect(swarm.prefixStats()).toMatchObject({ reports: 1, reportedTokens: 0, reportedEstimate: 192 });
    // The index now lets the copy hold fewer blocks than before: the oldest prompt is gone.
    expect(swarm.route({ prompt: prompts[1] as string }).cachedTokens).toBe(0);
    swarm.stop();
  });
});

describe('the plug-in', () => {
  it('gives each swarm its own index, and a restored swarm takes it again with an empty one', () => {
    const plugin = prefixCache();
    const a = createSwarm(equal(2), swarmConfig(4, 2), { seed: 1, prefixCache: plugin });
    a.route({ prompt: ask('1') });
    const b = createSwarm(equal(2), swarmConfig(4, 2), { seed: 1, prefixCache: plugin });
    expect(b.route({ prompt: ask('2') }).cachedTokens).toBe(0); // a's index is a's
    expect(a.route({ prompt: ask('2') }).cachedTokens).toBe(528);
    const saved = persistSwarm(a);
    a.stop();
    b.stop();
    const restored = restoreSwarm(equal(2), swarmConfig(4, 2), saved, { prefixCache: plugin });
    expect(restored.route({ prompt: ask('3') }).cachedTokens).toBe(0); // the index is not saved
    expect(restored.route({ prompt: ask('4') }).cachedTokens).toBe(528);
    restored.stop();
    const bare = restoreSwarm(equal(2), swarmConfig(4, 2), saved);
    expect(bare.route({ prompt: ask('3') }).cachedTokens).toBeUndefined();
    bare.stop();
  });
});

describe('the lifecycle', () => {
  it('a copy loses its entries when a node of it goes down, and the next copy learns', () => {
    const swarm = createSwarm(equal(4), swarmConfig(4, 2), on);
    const first = swarm.route({ prompt: ask('1') });
    const node = first.stages[0]?.nodeId as string;
    swarm.markDown(node);
    const moved = swarm.route({ prompt: ask('2') });
    expect(moved.pipelineId).not.toBe(first.pipelineId);
    expect(moved.cachedTokens).toBe(0);
    expect(swarm.route({ prompt: ask('3') }).cachedTokens).toBe(528);
    swarm.markAlive(node);
    // back, but empty: the copy that learnt keeps the prompt
    const back = swarm.route({ prompt: ask('4') });
    expect(back.pipelineId).toBe(moved.pipelineId);
    expect(back.cachedTokens).toBe(528);
    swarm.stop();
  });

  it('growth keeps the serving copies\' entries; a retirement wipes the copies through the node', () => {
    const swarm = createSwarm(equal(4), swarmConfig(4, 2), on);
    const first = swarm.route({ prompt: ask('1') });
    swarm.addNode({ id: 'late', memoryGb: 8, score: 2, latencyMs: 10 });
    const after = swarm.route({ prompt: ask('2') });
    expect(after.pipelineId).toBe(first.pipelineId);
    expect(after.cachedTokens).toBe(528);
    const blocks = swarm.prefixStats().blocks;
    swarm.removeNode(first.stages[0]?.nodeId as string);
    expect(swarm.prefixStats().blocks).toBe(0);
    expect(blocks).toBeGreaterThan(0);
    expect(swarm.route({ prompt: ask('3') }).cachedTokens).toBe(0);
    swarm.stop();
  });

  it('a route that is no whole copy (a splice) estimates 0 and learns nothing', () => {
    const profiles: NodeProfile[] = [
      { id: 'a1', memoryGb: 2, score: 2, latencyMs: 5 },
      { id: 'a2', memoryGb: 2, score: 2, latencyMs: 5 },
      { id: 'b1', memoryGb: 2, score: 2, latencyMs: 5 },
      { id: 'b2', memoryGb: 2, score: 2, latencyMs: 5 },
    ];
    const swarm = createSwarm(profiles, { models: [{ id: 'base', layers: 4, pipelines: 2 }] }, on);
    swarm.markDown('a1');
    swarm.markDown('b2');
    const splice = swarm.route({ prompt: ask('1') });
    expect(splice.cachedTokens).toBe(0);
    expect(swarm.prefixStats().blocks).toBe(0);
    swarm.stop();
  });
});

describe("costModel: 'original'", () => {
  it('property: a prompt changes neither the route nor its cost', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ q: fc.nat(5), tokens: fc.option(fc.nat(5000), { nil: undefined }), reserve: fc.boolean(), load: fc.option(fc.double({ min: 0, max: 2, noNaN: true }), { nil: undefined }), node: fc.nat(3) }), { maxLength: 25 }),
        (steps) => {
          const withPrompt = createSwarm(equal(4), swarmConfig(4, 2), { seed: 1, clock: new ManualClock(0), prefixCache: prefixCache() });
          const without = createSwarm(equal(4), swarmConfig(4, 2), { seed: 1, clock: new ManualClock(0) });
          for (const s of steps) {
            const base: SwarmRequest = { costModel: 'original', ...(s.tokens !== undefined ? { tokens: s.tokens } : {}) };
            const a: Route = withPrompt.route({ ...base, prompt: ask(String(s.q)) }, { reserve: s.reserve });
            const b: Route = without.route(base, { reserve: s.reserve });
            const { cachedTokens, ...rest } = a as Route & { lease?: unknown };
            expect(typeof cachedTokens).toBe('number');
            expect(rest).toEqual(b);
            if (s.load !== undefined) for (const sw of [withPrompt, without]) sw.report(`n${s.node}`, { load: s.load });
          }
          withPrompt.stop();
          without.stop();
        },
      ),
      { seed: 20261205, numRuns: 60 },
    );
  });
});
