/**
 * Routing with the prefix-cache index (docs/prefix-cache.md): the Swarm hands a request with a
 * prompt here. It hashes the prompt once, chooses the copy whose cost — the original design's, with the
 * prompt's cached tokens at a share — is lowest, unless the imbalance guard sends the request by
 * load, then records that the chosen copy now holds the prompt (GIE's approximate mode) until a
 * release with `cachedTokens` corrects it. The index is built at the first prompt, so a swarm
 * that never passes one pays nothing.
 *
 * Steps are synchronous and one at a time: {@link PrefixRouter.begin} hashes, `choose` (called
 * again when a stall re-routes) picks, `finish` records; their state lives on this object.
 */
import { chainCost, type ResolvedRequest } from '../core/cost.js';
import { isIntact, planIndex } from '../core/plan-index.js';
import { promptTokens, type Prompt } from '../core/prompt.js';
import type { Pipeline, Route, SwarmPlan } from '../core/types.js';
import type { PrefixHook, PrefixHost, PrefixStats } from '../runtime/prefix-hook.js';
import { imbalanced, promptTokensCost, type ResolvedPrefixCache } from './prefix-cache-options.js';
import { CopyLoad, guardConcurrency, REQUEST_TOKENS, type LoadNote } from './copy-load.js';
import { PrefixIndex, type CopyCache } from './prefix-index.js';
import type { PreciseFeeds } from './precise-feeds.js';
import { emptyBlocks, promptBlocks, stringSeed } from './prompt-blocks.js';

/** Affinity prices at most this many copies holding a prompt's deepest block (the lookup never scans every copy). */
const HOLDERS_VISITED = 16;

interface LeaseNote {
  readonly copy: CopyCache;
  readonly generation: number;
  readonly estimate: number;
  readonly blockTokens: number;
  readonly load: LoadNote;
}

/** See the module comment. */
export class PrefixRouter implements PrefixHook {
  private index: PrefixIndex | undefined;
  private readonly blocks = emptyBlocks();
  private readonly leases = new Map<string, LeaseNote>();
  /** Each copy's open work and effective concurrency (the delay guard's). */
  readonly load = new CopyLoad();
  /** Precise mode's feeds, when plugged in by `preciseCache` (docs/prefix-cache.md, "Precise mode"). */
  precise: PreciseFeeds | undefined;
  private readonly counters = { requests: 0, promptTokens: 0, estimatedTokens: 0, reports: 0, reportedTokens: 0, reportedEstimate: 0, guarded: 0 };
  // The request in hand, between begin and finish.
  private tokens = 0;
  /** The prompt's own size in tokens (the caller's `tokens` may say otherwise): what its fill counts. */
  private promptSize = 0;
  private blockTokens = 0;
  private chosen: CopyCache | undefined;
  private held = 0;
  /** The chosen route's cost with its cached tokens; undefined keeps the route's own. */
  private cost: number | undefined;

  constructor(readonly options: ResolvedPrefixCache, private readonly host: PrefixHost) {}

  /**
   * Takes a request: false when it has no prompt or opted out (route as before); else its prompt is hashed for `modelId` and `choose` and `finish` follow.
   */
  begin(request: { readonly prompt?: Prompt; readonly cache?: boolean }, modelId: string, r: ResolvedRequest): boolean {
    const o = this.options;
    const prompt = request.prompt;
    if (prompt === undefined || request.cache === false) return false;
    this.hash(prompt, modelId, o);
    this.promptSize = promptTokens(prompt);
    // The original cost model reads no prompt (tokens 0 by default); the estimate still counts the prompt's tokens.
    this.tokens = r.costModel === 'original' && r.tokens === 0 ? this.promptSize : r.tokens;
    this.chosen = undefined;
    this.held = 0;
    return true;
  }

  private hash(prompt: Prompt, modelId: string, o: ResolvedPrefixCache): void {
    // The model id is hashed each time (a few characters): a cache by id would grow with any id a caller sends.
    const text = typeof prompt === 'string';
    const ids = this.precise?.blockSize(modelId) ?? o.idBlockSize; // its precise copies' engine's block size
    promptBlocks(prompt, stringSeed(modelId), text ? o.textBlockChars : ids, this.blocks);
    this.blockTokens = text ? o.textBlockChars / 4 : ids;
  }

  /** The index, built at first use. */
  get built(): PrefixIndex {
    return (this.index ??= new PrefixIndex(this.host.plan(), (id) => this.host.memoryOf(id), this.options.maxBlocksPerCopy));
  }

  /** The tokens of the request in hand that `depth` blocks hold. */
  private cachedOf(depth: number): number {
    return Math.floor(Math.min(this.tokens, depth * this.blockTokens));
  }

  /** What the prompt in hand adds to copy `c`'s fill with `held` blocks cached: its uncached tokens, at most the copy's capacity (one fill). */
  private uncached(c: CopyCache, held: number): number {
    const size = this.promptSize;
    return Math.min(size - Math.min(size, held * this.blockTokens), Math.max(c.capacity, 1));
  }

  /** The tokens term of the request in hand with `held` blocks cached. */
  private tokensTerm(held: number, r: ResolvedRequest): number {
    const o = this.options;
    return promptTokensCost(this.tokens, this.cachedOf(held), o.cachedShare, r.weights, o.tokenWeight);
  }

  /**
   * The route for the request in hand: `byLoad` is the Swarm's own choice (index or scan), taken
   * as it is under the original cost model, when the model has no intact copy (a splice or the
   * survivors: no copy's cache), or when the guard trips. `finish` gives it its price.
   */
  choose(modelId: string, r: ResolvedRequest, byLoad: () => Route): Route {
    const index = this.built;
    const { keys, count } = this.blocks;
    this.chosen = undefined;
    this.held = 0;
    this.cost = undefined;
    const fallback = byLoad();
    const loadCopy = this.copyOf(fallback);
    if (loadCopy === undefined) return fallback;
    const loadHeld = index.depth(loadCopy, keys, count);
    this.chosen = loadCopy;
    this.held = loadHeld;
    if (r.costModel === 'original') return fallback; // priced as without a prompt
    const nodes = this.host.table.nodes;
    const loadChain = chainCost(loadCopy.pipeline.stages, nodes, r, this.host.table.extra, this.layersOf(modelId));
    this.cost = loadChain + this.tokensTerm(loadHeld, r);
    const deepest = loadHeld === count ? count : index.deepest(keys, count);
    const affine = this.tokens > 0 && this.cachedOf(deepest) >= this.options.cacheThreshold * this.tokens;
    if (!affine && this.options.placement === 'fill') return this.place(modelId, r, fallback, loadCopy);
    if (loadHeld >= deepest) return fallback; // the cheapest copy by load holds the most: nothing can beat it
    if (affine) return this.affine(modelId, r, fallback, loadCopy, deepest);
    // A copy holding more of the prompt may be cheaper: only those whose chain plus the best
    // possible tokens term beats the best so far are visited (in id order; ties stay with the first).
    const floor = this.tokensTerm(deepest, r);
    let best: { copy: CopyCache; pipeline: Pipeline; held: number; cost: number } | undefined;
    let bestCost = this.cost;
    const consider = (p: Pipeline, chain: number) => {
      const c = index.copies.get(p.id);
      if (c === undefined || c === loadCopy) return;
      const held = index.depth(c, keys, count);
      const cost = chain + this.tokensTerm(held, r);
      if (cost < bestCost) {
        best = { copy: c, pipeline: p, held, cost };
        bestCost = cost;
      }
    };
    const suspects = this.suspect(fallback);
    // A chain can win only if, with the most any copy holds cached, it costs strictly less (the same sum as `consider`'s).
    if (r.isDefault) this.host.table.visitBelow(modelId, suspects, (chain) => chain + floor < bestCost, consider);
    else this.scan(modelId, r, suspects, consider);
    const found = best as { copy: CopyCache; pipeline: Pipeline; held: number; cost: number } | undefined;
    if (found === undefined) return fallback;
    const pipeline = found.pipeline;
    if (this.guardTrips(found.copy, found.held, loadCopy, loadHeld)) {
      this.counters.guarded++;
      return fallback;
    }
    this.chosen = found.copy;
    this.held = found.held;
    this.cost = found.cost;
    return { modelId, pipelineId: pipeline.id, stages: pipeline.stages, cost: found.cost, hops: pipeline.stages.length - 1, degraded: false };
  }

  /**
   * Affinity (docs/prefix-cache.md): some copy holds at least `cacheThreshold` of the prompt, more
   * than the load copy does: the cheapest intact copy among the first {@link HOLDERS_VISITED} that took
   * the deepest block goes, unless the guard sends the request by load.
   */
  private affine(modelId: string, r: ResolvedRequest, fallback: Route, loadCopy: CopyCache, deepest: number): Route {
    const index = this.index as PrefixIndex;
    const nodes = this.host.table.nodes;
    const suspects = this.suspect(fallback);
    const layers = this.layersOf(modelId);
    let best: CopyCache | undefined;
    let bestChain = Infinity;
    let visited = 0;
    index.holders(this.blocks.keys[deepest - 1] as number, (c) => {
      if (++visited > HOLDERS_VISITED) return false;
      if (c === loadCopy || !isIntact(c.pipeline, nodes)) return true;
      if (!suspects && c.pipeline.stages.some((s) => nodes[s.nodeId]?.suspect === true)) return true;
      const chain = chainCost(c.pipeline.stages, nodes, r, this.host.table.extra, layers);
      if (chain < bestChain) {
        best = c;
        bestChain = chain;
      }
      return true;
    });
    const found = best as CopyCache | undefined;
    // No holder can take it (broken, suspect): a new prompt as far as the copies that can are concerned.
    if (found === undefined) return this.options.placement === 'fill' ? this.place(modelId, r, fallback, loadCopy) : fallback;
    const pipeline = found.pipeline;
    if (this.guardTrips(found, deepest, loadCopy, this.held)) {
      this.counters.guarded++;
      return fallback;
    }
    this.chosen = found;
    this.held = deepest;
    this.cost = bestChain + this.tokensTerm(deepest, r);
    return { modelId, pipelineId: pipeline.id, stages: pipeline.stages, cost: this.cost, hops: pipeline.stages.length - 1, degraded: false };
  }

  /**
   * A prompt no copy holds `cacheThreshold` of (placement `'fill'`): the least-filled intact copy
   * of the model (docs/prefix-cache.md), unless the guard sends it by load.
   */
  private place(modelId: string, r: ResolvedRequest, fallback: Route, loadCopy: CopyCache): Route {
    const index = this.index as PrefixIndex;
    const nodes = this.host.table.nodes;
    const suspects = this.suspect(fallback);
    const found = index.fills.least(modelId, (c) => isIntact(c.pipeline, nodes) && (suspects || !c.pipeline.stages.some((s) => nodes[s.nodeId]?.suspect === true)));
    if (found === undefined || found === loadCopy) return fallback;
    const pipeline = found.pipeline;
    const { keys, count } = this.blocks;
    const held = index.depth(found, keys, count);
    if (this.guardTrips(found, held, loadCopy, this.held)) {
      this.counters.guarded++;
      return fallback;
    }
    this.chosen = found;
    this.held = held;
    this.cost = chainCost(pipeline.stages, nodes, r, this.host.table.extra, this.layersOf(modelId)) + this.tokensTerm(this.held, r);
    return { modelId, pipelineId: pipeline.id, stages: pipeline.stages, cost: this.cost, hops: pipeline.stages.length - 1, degraded: false };
  }

  /** The non-default request: every intact copy of the model, priced by the scan's own chain cost. */
  private scan(modelId: string, r: ResolvedRequest, suspects: boolean, consider: (p: Pipeline, chain: number) => void): void {
    const nodes = this.host.table.nodes;
    const layers = this.layersOf(modelId);
    for (const p of planIndex(this.host.plan()).pipelinesByModel.get(modelId) ?? []) {
      if (!isIntact(p, nodes)) continue;
      if (!suspects && p.stages.some((s) => nodes[s.nodeId]?.suspect === true)) continue;
      consider(p, chainCost(p.stages, nodes, r, this.host.table.extra, layers));
    }
  }

  private layersOf(modelId: string): number | undefined {
    return planIndex(this.host.plan()).models.get(modelId)?.layers;
  }

  private suspect(route: Route): boolean {
    const nodes = this.host.table.nodes;
    return route.stages.some((s) => nodes[s.nodeId]?.suspect === true);
  }

  /** The copy a route runs on whole (its pipeline's stages, every node alive), else undefined. */
  private copyOf(route: Route): CopyCache | undefined {
    if (route.degraded) return undefined;
    const c = this.index?.copies.get(route.pipelineId);
    if (c === undefined) return undefined;
    const p = c.pipeline;
    if (p.stages !== route.stages && !sameStages(p.stages, route.stages)) return undefined;
    return isIntact(p, this.host.table.nodes) ? c : undefined;
  }

  /**
   * The guard between the copy the cache prefers (holding `cachedHeld` blocks of the prompt in
   * hand) and the one load chose (holding `loadHeld`): docs/prefix-cache.md, "The guard".
   */
  private guardTrips(cached: CopyCache, cachedHeld: number, byLoad: CopyCache, loadHeld: number): boolean {
    const [a, as] = this.loadOf(cached.pipeline.stages);
    const [b, bs] = this.loadOf(byLoad.pipeline.stages);
    if (this.options.guard === 'count') return imbalanced(a, as, b, bs, this.options);
    // An idle copy's notes keep only what leases that expired unreleased left: dropped.
    if (a === 0) this.load.idle(cached.pipeline.id);
    if (b === 0) this.load.idle(byLoad.pipeline.id);
    const k = guardConcurrency(this.load.concurrency(cached.pipeline, as), this.load.concurrency(byLoad.pipeline, bs), b);
    return k !== undefined && this.delay(cached, a, k[0], cachedHeld) > this.options.balanceRel * this.delay(byLoad, b, k[1], loadHeld);
  }

  /**
   * How long the prompt in hand would take to start and prefill on copy `c`, in prefill tokens
   * of a node of score 1: the open work queued past its effective concurrency `k` (its requests
   * beyond `k − 1`, each at the mean work of those in flight, shared by `k` servers), then its own
   * uncached tokens and {@link REQUEST_TOKENS}; over the copy's speed.
   */
  private delay(c: CopyCache, inflight: number, k: number, held: number): number {
    const queued = inflight >= k ? ((inflight - k + 1) * this.load.workOf(c.pipeline.id)) / inflight / k : 0;
    return (queued + this.uncached(c, held) + REQUEST_TOKENS) * this.secondsPerToken(c.pipeline.stages);
  }

  /** Time per prompt token through the copy, relative: each stage's share of the model's layers over its node's score. */
  private secondsPerToken(stages: Route['stages']): number {
    const nodes = this.host.table.nodes;
    let total = 0;
    let t = 0;
    for (const s of stages) total += s.layerEnd - s.layerStart;
    for (const s of stages) t += (s.layerEnd - s.layerStart) / total / Math.max(nodes[s.nodeId]?.score ?? 1, 1e-9);
    return t;
  }

  /** A copy's load: the requests in flight on its busiest node, and its slots (the fewest any node declares), if every node declares some. */
  private loadOf(stages: Route['stages']): [number, number | undefined] {
    let load = 0;
    let slots: number | undefined = Infinity;
    for (const s of stages) {
      load = Math.max(load, this.host.table.inflightOf(s.nodeId));
      const n = this.host.slotsOf(s.nodeId);
      slots = n === undefined || slots === undefined ? undefined : Math.min(slots, n);
    }
    return [load, slots === Infinity ? undefined : slots];
  }

  /**
   * Records the request in hand on the copy chosen, notes the estimate under the lease (if
   * reserved), and returns the route with `cachedTokens`.
   */
  finish<R extends Route>(route: R, leaseId?: string): R & { readonly cachedTokens: number } {
    const c = this.chosen;
    const estimate = c === undefined ? 0 : this.cachedOf(this.held);
    if (c !== undefined) {
      const { keys, count } = this.blocks;
      const index = this.index as PrefixIndex;
      index.record(c, keys, count, this.held, this.blockTokens);
      index.fills.grew(c, this.uncached(c, this.held), c.capacity);
      this.counters.requests++;
      this.counters.promptTokens += this.tokens;
      this.counters.estimatedTokens += estimate;
      if (leaseId !== undefined) {
        const fresh = this.uncached(c, this.held);
        const load = this.load.opened(c.pipeline.id, fresh + REQUEST_TOKENS, this.loadOf(c.pipeline.stages)[0], fresh > 0);
        this.note(leaseId, { copy: c, generation: c.generation, estimate, blockTokens: this.blockTokens, load });
      }
    }
    this.chosen = undefined;
    const cost = this.cost ?? route.cost;
    return { ...route, cost, cachedTokens: estimate };
  }

  private note(leaseId: string, note: LeaseNote): void {
    // Leases that expired unreleased leave their notes: swept when the notes outgrow what can be open.
    if (this.leases.size >= 1024 && this.leases.size % 1024 === 0) {
      for (const [id, gone] of this.leases) {
        if (this.host.isOpen(id)) continue;
        this.leases.delete(id);
        this.load.closed(gone.load, undefined);
      }
    }
    this.leases.set(leaseId, note);
  }

  /** A lease ended: its work leaves its copy, its latency teaches the copy's concurrency; with `cachedTokens`, the copy's report corrects the index (docs/prefix-cache.md). */
  released(leaseId: string, cachedTokens: number | undefined, latencyMs?: number): void {
    const note = this.leases.get(leaseId);
    if (note === undefined) return;
    this.leases.delete(leaseId);
    // The copy's report says what the prefill really was: fewer cached tokens than estimated, more work.
    this.load.closed(note.load, latencyMs, cachedTokens === undefined ? note.load.work : Math.max(REQUEST_TOKENS, note.load.work + note.estimate - cachedTokens));
    if (cachedTokens === undefined) return;
    this.counters.reports++;
    this.counters.reportedTokens += cachedTokens;
    this.counters.reportedEstimate += note.estimate;
    // Less than estimated while a prefill bringing the copy new blocks was open is no sign of eviction: they may not be in yet.
    if (note.copy.generation === note.generation && !(note.load.behind && cachedTokens < note.estimate)) this.index?.correct(note.copy, note.estimate, cachedTokens, note.blockTokens);
  }

  /**
   * A session's route after a failover (docs/sessions.md): if it runs on one copy whole, that
   * copy's index learns the session's prompt, replayed into it.
   */
  learn(route: Route, request: { readonly prompt?: Prompt; readonly cache?: boolean; readonly model?: string }, tokens: number): void {
    const o = this.options;
    if (request.prompt === undefined || request.cache === false) return;
    const index = this.built;
    const c = this.copyOf(route);
    if (c === undefined) return;
    this.hash(request.prompt, route.modelId, o);
    this.tokens = tokens;
    this.promptSize = promptTokens(request.prompt);
    const { keys, count } = this.blocks;
    const held = index.depth(c, keys, count);
    index.record(c, keys, count, held, this.blockTokens);
    index.fills.grew(c, this.uncached(c, held), c.capacity);
  }

  /** A node went down or left: the copies through it lose their entries. */
  nodeLost(nodeId: string): void {
    this.index?.nodeLost(nodeId);
    this.precise?.nodeLost(nodeId);
  }

  /** The statechart adopted a plan (growth, retirement). */
  adopt(plan: SwarmPlan): void {
    this.index?.adopt(plan);
    this.precise?.adopted();
  }

  /** The counters (plain data). */
  stats(): PrefixStats {
    return { ...this.counters, blocks: this.index?.size ?? 0 };
  }
}

function sameStages(a: Route['stages'], b: Route['stages']): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => x.nodeId === b[i]?.nodeId && x.layerStart === b[i]?.layerStart && x.layerEnd === b[i]?.layerEnd);
}
