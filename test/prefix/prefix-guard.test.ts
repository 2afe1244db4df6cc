/**
 * The delay guard (docs/prefix-cache.md, "The guard"): a burst held at once on equal copies
 * spreads with `slots` unset; declared slots let it stay with the cache as long as they hold it;
 * a hot prefix gets a second copy when its queue says so; the effective concurrency learnt from
 * latencies and reported by engines (`CopyLoad`).
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, type NodeProfile } from '../../src/index.js';
import { ConcurrencyLearner, CopyLoad, guardConcurrency } from '../../src/prefix/copy-load.js';
import { prefixCache, type PrefixCacheOptions } from '../../src/prefix/index.js';

const nodes = (slots?: number): NodeProfile[] => Array.from({ length: 8 }, (_, i) => ({ id: `n${i}`, memoryGb: 24, score: 2, latencyMs: 10, ...(slots !== undefined ? { slots } : {}) }));
/** One model of 16 layers of 2 GB in 4 copies: each copy takes two 24 GB nodes. */
const config = { models: [{ id: 'base', layers: 16, layerGb: 2, pipelines: 4 }] };
const prefix = 'Shared context for every request of this burst. '.repeat(90).slice(0, 4096);

/** 40 requests sharing a 4 K-character prefix, reserved and held at once: the requests per copy, highest first. */
function burst(options?: PrefixCacheOptions, slots?: number, n = 40): number[] {
  const swarm = createSwarm(nodes(slots), config, { seed: 1, prefixCache: prefixCache(options) });
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const r = swarm.route({ prompt: `${prefix} question ${i}?` }, { reserve: true });
    counts.set(r.pipelineId, (counts.get(r.pipelineId) ?? 0) + 1);
  }
  expect(swarm.state().plan.pipelines).toHaveLength(4);
  swarm.stop();
  return [...counts.values()].sort((a, b) => b - a);
}

describe('the delay guard', () => {
  it('spreads a burst of 40 sharing a prefix, held at once on 4 equal copies with slots unset: no copy holds more than 12', () => {
    const spread = burst();
    expect(spread.reduce((a, b) => a + b, 0)).toBe(40);
    expect(spread).toHaveLength(4);
    expect(spread[0]).toBeLessThanOrEqual(12);
    // the count guard (the rule before, 64 / 1.5) leaves all 40 on the copy that took the first
    expect(burst({ guard: 'count' })).toEqual([40]);
  });

  it('weighs in-flight work against declared slots: 16 slots a node keep the burst with the cache, 1 slot spreads it', () => {
    expect(burst(undefined, 16)).toEqual([40]);
    expect(burst(undefined, 1)[0]).toBeLessThanOrEqual(12);
  });

  it('gives a hot prefix a second copy when its queue says so, and the second copy then counts as holding it', () => {
    const swarm = createSwarm(nodes(), config, { seed: 1, prefixCache: prefixCache() });
    const routes = Array.from({ length: 12 }, (_, i) => swarm.route({ prompt: `${prefix} q${i}` }, { reserve: true }));
    const holders = new Set(routes.map((r) => r.pipelineId));
    expect(holders.size).toBeGreaterThan(1);
    // each copy that took a request of the prefix held it from its second on
    const later = routes.filter((r, i) => routes.findIndex((x) => x.pipelineId === r.pipelineId) !== i);
    expect(later.every((r) => r.cachedTokens === 1024)).toBe(true);
    expect(swarm.prefixStats().guarded).toBeGreaterThan(0);
    swarm.stop();
  });
});

describe('the delay guard before and after latencies', () => {
  /** 4 copies each holding one request of its own prompt, then 40 sharing a prefix held at once: the 40 per copy, highest first. */
  function busyBurst(learn: boolean): number[] {
    const swarm = createSwarm(nodes(), config, { seed: 1, prefixCache: prefixCache() });
    if (learn) {
      // new prompts one at a time, each alone on its copy and released after 40 ms
      for (let i = 0; i < 12; i++) {
        const r = swarm.route({ prompt: `${String(i).repeat(8)} ${prefix}` }, { reserve: true });
        swarm.release(r.lease, { latencyMs: 40, ok: true });
      }
    }
    const busy = new Set(Array.from({ length: 4 }, (_, i) => swarm.route({ prompt: `busy ${i} ${prefix}` }, { reserve: true }).pipelineId));
    expect(busy.size).toBe(4);
    const counts = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      const r = swarm.route({ prompt: `${prefix} question ${i}?` }, { reserve: true });
      counts.set(r.pipelineId, (counts.get(r.pipelineId) ?? 0) + 1);
    }
    swarm.stop();
    return [...counts.values()].sort((a, b) => b - a);
  }

  it('keeps a burst with the cache while no copy is idle and no latency says what a copy serves at once; spreads it once latencies show one at a time', () => {
    expect(busyBurst(false)).toEqual([40]);
    const learnt = busyBurst(true);
    expect(learnt.length).toBeGreaterThan(1);
    expect(learnt[0]).toBeLessThanOrEqual(12);
  });
});

describe('effective concurrency', () => {
  it('learns 1 from a server whose latency grows with each request in flight, and 4 from one flat up to 4; nothing before a level was seen 3 times', () => {
    const one = new ConcurrencyLearner();
    const four = new ConcurrencyLearner();
    expect(one.concurrency).toBeUndefined();
    one.observe(1, 40);
    one.observe(1, 40);
    expect(one.concurrency).toBeUndefined();
    for (let round = 0; round < 5; round++) {
      for (let n = 1; n <= 8; n++) {
        one.observe(n, 40 * n);
        four.observe(n, 40 * Math.max(1, n - 3) + (n % 2)); // flat (within noise) up to 4, then queueing
      }
    }
    expect(one.concurrency).toBe(1);
    expect(four.concurrency).toBe(4);
  });

  it('knows nothing of a copy seen only queued: its fastest request was already slow at every level seen', () => {
    const deep = new ConcurrencyLearner();
    deep.observe(2, 10); // one request that did not queue, then only deep queues
    for (let round = 0; round < 5; round++) for (let n = 30; n <= 40; n++) deep.observe(n, 10 * (n - 20));
    expect(deep.concurrency).toBeUndefined();
  });

  it('weighs an unknown copy as the other one, and neither known only against a copy with nothing in flight', () => {
    expect(guardConcurrency(4, 2, 3)).toEqual([4, 2]);
    expect(guardConcurrency(undefined, 2, 3)).toEqual([2, 2]);
    expect(guardConcurrency(4, undefined, 3)).toEqual([4, 4]);
    expect(guardConcurrency(undefined, undefined, 0)).toEqual([1, 1]);
    expect(guardConcurrency(undefined, undefined, 1)).toBeUndefined();
  });

  it('takes an engine\'s running and waiting counts: waiting means it is full at its running count', () => {
    const load = new CopyLoad();
    expect(load.engineOf('a')).toBeUndefined();
    load.engineLoad('a', 3, 0);
    expect(load.engineOf('a')).toBe(3);
    load.engineLoad('a', 6, 0);
    expect(load.engineOf('a')).toBe(6);
    load.engineLoad('a', 4, 2);
    expect(load.engineOf('a')).toBe(4);
    load.engineLoad('a', Number.NaN, 1);
    expect(load.engineOf('a')).toBe(4); // bad counts change nothing
  });

  it('learns from the work a request turned out to be: an estimated hit the copy reported a miss is no sign of queueing', () => {
    const learn = (reported: boolean) => {
      const load = new CopyLoad();
      for (let i = 0; i < 3; i++) load.closed(load.opened('p', 2304, 1, true), 40);
      for (let i = 0; i < 3; i++) load.closed(load.opened('p', 256, 2, false), 40, reported ? 2304 : undefined); // estimated cached
      return load.learnt('p');
    };
    expect(learn(true)).toBe(2);
    expect(learn(false)).toBe(1);
  });

  it('takes a copy\'s declared slots, else its engines\' report if every node gave one, else what it learnt', () => {
    const load = new CopyLoad();
    const copy = { id: 'p', stages: [{ nodeId: 'a' }, { nodeId: 'b' }] };
    expect(load.concurrency(copy, undefined)).toBeUndefined();
    for (let i = 0; i < 3; i++) load.closed(load.opened('p', 100, 1, true), 10);
    expect(load.concurrency(copy, undefined)).toBe(1);
    load.engineLoad('a', 6, 0);
    expect(load.concurrency(copy, undefined)).toBe(1); // b has not reported
    load.engineLoad('b', 3, 2);
    expect(load.concurrency(copy, undefined)).toBe(3);
    expect(load.concurrency(copy, 8)).toBe(8);
  });

  it('counts each lease\'s work until it closes, and drops what an idle copy still shows', () => {
    const load = new CopyLoad();
    const a = load.opened("p", 1000, 1, true);
    const b = load.opened("p", 200, 2, false);
    expect(load.workOf('p')).toBe(1200);
    load.closed(a, 50);
    expect(load.workOf('p')).toBe(200);
    load.idle('p');
    expect(load.workOf('p')).toBe(0);
    load.closed(b, undefined);
    expect(load.workOf('p')).toBe(0);
  });
});
