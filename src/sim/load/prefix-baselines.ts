/**
 * FROZEN: the field's routers for W7 and the held-out workloads H1 and H2, as their documentation
 * describes them (docs/prefix-cache.md, "Simulation"): round-robin, prefix-only (longest match),
 * SGLang's cache-aware router with its defaults, the Gateway API Inference Extension's weighted
 * scorers, Dynamo's KV router cost. Router-side indexes are approximate as theirs are: they assume
 * the chosen copy now holds the prompt and never hear of evictions; Dynamo's reads the nodes'
 * caches, as its KV events tell it.
 *
 * This file is the baselines' code as it was at be04daf, moved here unchanged and imported by
 * nothing of the library's router, so a change to ours cannot move the baselines. Its bytes are
 * pinned by test/sim/prefix-baselines-frozen.test.ts: change it only on purpose, and say so in
 * CHANGELOG.md with the figures measured before and after.
 */
import { BlockCache } from './block-cache.js';
import type { CopySample, PrefixPick, PrefixPolicy, PrefixRouter, PrefixRouterContext } from './prefix-router.js';
import type { PromptRequest } from './prefix-workloads.js';
import type { SimPipeline } from './load-topology.js';

/** Shared plumbing (the oracle's too): the copies, this router's outstanding requests per copy, the latest samples. */
export abstract class BaseRouter implements PrefixRouter {
  protected readonly copies: readonly SimPipeline[];
  protected readonly outstanding: number[];
  protected samples: readonly CopySample[];
  constructor(protected readonly context: PrefixRouterContext) {
    this.copies = context.topology.pipelines;
    this.outstanding = this.copies.map(() => 0);
    this.samples = this.copies.map(() => ({ queue: 0, kvUtil: 0 }));
  }
  protected abstract choose(request: PromptRequest): number;
  pick(_now: number, request: PromptRequest): PrefixPick {
    const i = this.choose(request);
    this.outstanding[i] = (this.outstanding[i] ?? 0) + 1;
    return { pipeline: i, stages: (this.copies[i] as SimPipeline).stages };
  }
  first(_now: number, _pick: PrefixPick, _request: PromptRequest): void {}
  done(_now: number, pick: PrefixPick, _request: PromptRequest): void {
    this.outstanding[pick.pipeline] = (this.outstanding[pick.pipeline] ?? 0) - 1;
  }
  telemetry(_now: number, copies: readonly CopySample[]): void {
    this.samples = copies;
  }
  /** The index among `score`'s best (highest) values, ties at random. */
  protected argmax(score: (i: number) => number): number {
    let best = 0;
    let top = -Infinity;
    let ties = 0;
    for (let i = 0; i < this.copies.length; i++) {
      const v = score(i);
      if (v > top) {
        top = v;
        best = i;
        ties = 1;
      } else if (v === top && this.context.rng.int(++ties) === 0) best = i;
    }
    return best;
  }
}

/** A router-side approximate index: per copy, the blocks it sent there (LRU, `capacity` blocks). */
class ApproxIndex {
  readonly perCopy: BlockCache[];
  constructor(copies: number, capacity: number) {
    this.perCopy = Array.from({ length: copies }, () => new BlockCache(capacity));
  }
  matched(copy: number, request: PromptRequest): number {
    return (this.perCopy[copy] as BlockCache).peek(request.blocks);
  }
  sent(copy: number, request: PromptRequest): void {
    (this.perCopy[copy] as BlockCache).insert(request.blocks);
  }
}

/** Round-robin over the copies. */
export const roundRobin: PrefixPolicy = {
  id: 'round-robin',
  label: 'round-robin',
  create: (context) =>
    new (class extends BaseRouter {
      private next = 0;
      protected choose(): number {
        const i = this.next;
        this.next = (this.next + 1) % this.copies.length;
        return i;
      }
    })(context),
};

/** Prefix-only: the copy with the longest match in its own index, ties to the fewest outstanding. */
export const prefixOnly: PrefixPolicy = {
  id: 'prefix-only',
  label: 'prefix-only (longest match, approximate index)',
  create: (context) =>
    new (class extends BaseRouter {
      private readonly index = new ApproxIndex(this.copies.length, 1 << 22);
      protected choose(request: PromptRequest): number {
        const i = this.argmax((c) => this.index.matched(c, request) * 1e6 - (this.outstanding[c] ?? 0));
        this.index.sent(i, request);
        return i;
      }
    })(context),
};

/** SGLang router's cache-aware defaults. */
export const SGLANG_DEFAULTS = Object.freeze({ cacheThreshold: 0.3, balanceAbsThreshold: 64, balanceRelThreshold: 1.5 });

/**
 * SGLang's cache-aware router: by its own outstanding counts, shortest queue when max − min >
 * 64 and max > 1.5 × min; otherwise the best match when it covers more than 0.3 of the prompt,
 * else the copy whose tree is smallest. Its trees hold what it sent (no eviction at this scale).
 */
export const sglangCacheAware: PrefixPolicy = {
  id: 'sglang-cache-aware',
  label: 'SGLang cache-aware (threshold 0.3, balance 64 / 1.5)',
  create: (context) =>
    new (class extends BaseRouter {
      private readonly index = new ApproxIndex(this.copies.length, 1 << 22);
      protected choose(request: PromptRequest): number {
        const loads = this.outstanding;
        const max = Math.max(...loads);
        const min = Math.min(...loads);
        let i: number;
        if (max - min > SGLANG_DEFAULTS.balanceAbsThreshold && max > SGLANG_DEFAULTS.balanceRelThreshold * min) {
          i = this.argmax((c) => -(loads[c] ?? 0));
        } else {
          const best = this.argmax((c) => this.index.matched(c, request));
          const rate = request.blocks.length === 0 ? 0 : this.index.matched(best, request) / request.blocks.length;
          i = rate > SGLANG_DEFAULTS.cacheThreshold ? best : this.argmax((c) => -(this.index.perCopy[c] as BlockCache).size);
        }
        this.index.sent(i, request);
        return i;
      }
    })(context),
};

/** GIE's default scorer weights and its approximate prefix index's LRU capacity per server (blocks). */
export const GIE_DEFAULTS = Object.freeze({ prefix: 3, queue: 2, kvUtil: 2, lruBlocks: 31_250 });

/**
 * Gateway API Inference Extension: 3 × prefix score (matched ÷ total blocks of its approximate,
 * LRU index) + 2 × queue score (min–max normalised waiting queue, from the monitor) + 2 × KV
 * score (1 − KV utilisation, from the monitor); the highest, ties at random.
 */
export const gieScorers: PrefixPolicy = {
  id: 'gie-scorers',
  label: 'GIE weighted scorers (prefix 3, queue 2, kv-util 2)',
  create: (context) =>
    new (class extends BaseRouter {
      private readonly index = new ApproxIndex(this.copies.length, GIE_DEFAULTS.lruBlocks);
      protected choose(request: PromptRequest): number {
        const queues = this.samples.map((s) => s.queue);
        const qMax = Math.max(...queues);
        const qMin = Math.min(...queues);
        const total = Math.max(request.blocks.length, 1);
        const i = this.argmax((c) => {
          const s = this.samples[c] as CopySample;
          const queue = qMax === qMin ? 1 : (qMax - s.queue) / (qMax - qMin);
          return GIE_DEFAULTS.prefix * (this.index.matched(c, request) / total) + GIE_DEFAULTS.queue * queue + GIE_DEFAULTS.kvUtil * (1 - s.kvUtil);
        });
        this.index.sent(i, request);
        return i;
      }
    })(context),
};

/** Dynamo KV router's default overlap weight. */
export const DYNAMO_OVERLAP_WEIGHT = 1;

/**
 * Dynamo's KV router: cost = overlap weight × prefill blocks (the copy's queued uncached prompt
 * blocks plus this request's) + decode blocks (the blocks of its active requests plus this
 * one's); the lowest, ties at random. Overlap comes from the first node's cache (KV events).
 */
export const dynamoCost: PrefixPolicy = {
  id: 'dynamo-kv',
  label: 'Dynamo KV router (overlap weight 1)',
  create: (context) =>
    new (class extends BaseRouter {
      private readonly prefill = this.copies.map(() => 0);
      private readonly active = this.copies.map(() => 0);
      private readonly charged = new Map<PromptRequest, number>();
      protected choose(request: PromptRequest): number {
        const blocks = request.blocks.length;
        const newBlocks = (c: number) => blocks - context.truth.cachedBlocks(((this.copies[c] as SimPipeline).stages[0] as { node: number }).node, request.blocks);
        const i = this.argmax((c) => -(DYNAMO_OVERLAP_WEIGHT * ((this.prefill[c] ?? 0) + newBlocks(c)) + (this.active[c] ?? 0) + blocks));
        const fresh = newBlocks(i);
        this.prefill[i] = (this.prefill[i] ?? 0) + fresh;
        this.active[i] = (this.active[i] ?? 0) + blocks;
        this.charged.set(request, fresh);
        return i;
      }
      override first(_now: number, pick: PrefixPick, request: PromptRequest): void {
        this.prefill[pick.pipeline] = (this.prefill[pick.pipeline] ?? 0) - (this.charged.get(request) ?? 0);
        this.charged.delete(request);
      }
      override done(now: number, pick: PrefixPick, request: PromptRequest): void {
        super.done(now, pick, request);
        this.active[pick.pipeline] = (this.active[pick.pipeline] ?? 0) - request.blocks.length;
      }
    })(context),
};

