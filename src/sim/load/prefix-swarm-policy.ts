/**
 * The library's own router in W7: a real `Swarm` on the simulation's clock, every route reserved
 * and released when the answer is done with its latency. Cache-blind is today's cost (the
 * prompt's length as `tokens`, nothing cached); ours passes the prompt's token ids to `route` and
 * releases with the cached tokens the first node reported; its swarm has the prefix-cache plug-in
 * (`hecate-swarm/prefix`), cache-blind's has none.
 */
import { prefixCache } from '../../prefix/index.js';
import { preciseCache, type PreciseCache } from '../../prefix/precise-cache.js';
import type { KvEvent } from '../../prefix/kv-feed.js';
import { BLOCK_TOKENS } from './prefix-constants.js';
import { createSwarm } from '../../runtime/index.js';
import type { Lease } from '../../runtime/types.js';
import type { PrefixOutcome, PrefixPick, PrefixPolicy, PrefixRouter, PrefixRouterContext, SimKvEvent } from './prefix-router.js';
import type { PromptRequest } from './prefix-workloads.js';
import { routeOrNone, simRoute } from './load-topology.js';

interface Open {
  readonly lease: Lease;
  readonly t0: number;
  cachedTokens: number;
}

/** Precise mode: the engines' KV events reach the index at each telemetry tick (100 ms, as an agent reports them) or at once. */
export type PreciseDelivery = 'tick' | 'now';

class SwarmPrefixRouter implements PrefixRouter {
  private readonly swarm;
  private readonly open = new Map<PromptRequest, Open>();
  /** Precise mode: the plug-in, and each first-stage node's events not delivered yet with its last sequence number. */
  private readonly precise: PreciseCache | undefined;
  private readonly waiting = new Map<number, { seq: number; events: KvEvent[] }>();
  kv?: (node: number, event: SimKvEvent) => void;
  constructor(private readonly context: PrefixRouterContext, private readonly withPrompt: boolean, declareSlots = false, delivery?: PreciseDelivery) {
    const { topology } = context;
    const profiles = declareSlots ? topology.profiles.map((p, i) => ({ ...p, slots: (topology.nodes[i] as { slots: number }).slots })) : topology.profiles;
    this.precise = delivery === undefined ? undefined : preciseCache();
    const plugin = this.precise?.plugin ?? prefixCache();
    this.swarm = createSwarm(profiles, { models: [topology.spec.model] }, { clock: context.clock, seed: context.seed, ...(withPrompt ? { prefixCache: plugin } : {}) });
    if (this.precise === undefined) return;
    this.swarm.route({ prompt: [0] }); // builds the index
    // Every first stage's engine starts empty: its snapshot of nothing makes its copy precise.
    for (const p of topology.pipelines) {
      const node = (p.stages[0] as { node: number }).node;
      this.waiting.set(node, { seq: 0, events: [] });
      this.report(node, { seq: 0, stored: [] });
    }
    const model = topology.spec.model.id;
    this.kv = (node, e) => {
      const w = this.waiting.get(node);
      if (w === undefined) return; // not a first stage: its cache stands for no copy
      w.events.push(e.kind === 'stored' ? { seq: ++w.seq, kind: 'stored', model, blocks: e.blocks } : { seq: ++w.seq, kind: 'removed', model, hashes: e.hashes });
      if (delivery === 'now') this.report(node);
    };
  }

  private report(node: number, snapshot?: { seq: number; stored: [] }): void {
    const w = this.waiting.get(node);
    if (w === undefined) return;
    const id = (this.context.topology.nodes[node] as { id: string }).id;
    this.precise?.feeds()?.accept(id, { epoch: 'sim', blockSize: BLOCK_TOKENS, events: w.events, ...(snapshot !== undefined ? { snapshot } : {}) });
    w.events = [];
  }

  pick(now: number, request: PromptRequest): PrefixPick | undefined {
    const route = routeOrNone(() => this.swarm.route(this.withPrompt ? { prompt: Array.from(request.ids) } : { tokens: request.ids.length }, { reserve: true }));
    if (route === undefined) return undefined;
    this.open.set(request, { lease: route.lease, t0: now, cachedTokens: 0 });
    return { ...simRoute(this.context.topology, route), token: route.lease };
  }

  first(_now: number, _pick: PrefixPick, request: PromptRequest, outcome: PrefixOutcome): void {
    const o = this.open.get(request);
    if (o !== undefined) o.cachedTokens = outcome.cachedTokens;
  }

  done(now: number, _pick: PrefixPick, request: PromptRequest): void {
    const o = this.open.get(request);
    if (o === undefined) return;
    this.open.delete(request);
    if (o.lease.expiresAt <= now) return;
    this.swarm.release(o.lease, { latencyMs: now - o.t0, ok: true, ...(this.withPrompt ? { cachedTokens: o.cachedTokens } : {}) });
  }

  telemetry(): void {
    for (const node of this.waiting.keys()) this.report(node);
  }
}

/** Today's cost, cache-blind: every prompt token priced as new work on every copy (real Swarm, leases). */
export const cacheBlind: PrefixPolicy = {
  id: 'cache-blind',
  label: "today's cost, cache-blind (real Swarm, leases, tokens = prompt length)",
  create: (context) => new SwarmPrefixRouter(context, false),
};

/** Ours: the real Swarm routing by the prompt, released with the node's cached tokens. */
export const oursPrefix: PrefixPolicy = {
  id: 'ours',
  label: 'ours: real Swarm, route({ prompt }), release with cachedTokens',
  create: (context) => new SwarmPrefixRouter(context, true),
};


/** Ours with every node's `slots` declared (what the simulated node serves at once). */
export const oursSlots: PrefixPolicy = {
  id: 'ours-slots',
  label: 'ours, slots declared',
  create: (context) => new SwarmPrefixRouter(context, true, true),
};

/** Ours in precise mode: each copy's first-stage engine reports its cache as KV events, delivered every 100 ms. */
export const oursPrecise: PrefixPolicy = {
  id: 'ours-precise',
  label: 'ours, precise: first stages report their KV blocks (every 100 ms)',
  create: (context) => new SwarmPrefixRouter(context, true, false, 'tick'),
};

/** Ours in precise mode with every event delivered at once (the bound a report's lag leaves). */
export const oursPreciseNow: PrefixPolicy = {
  id: 'ours-precise-now',
  label: 'ours, precise: KV events delivered at once',
  create: (context) => new SwarmPrefixRouter(context, true, false, 'now'),
};

/**
 * `n` orchestrator replicas, each its own Swarm and index, each request taken by one at random:
 * estimated, each learns only its own routes; precise, every replica hears every first stage's KV
 * events (as replicas share them over NATS), at each telemetry tick.
 */
class ReplicaRouters implements PrefixRouter {
  private readonly routers: SwarmPrefixRouter[];
  private readonly owner = new Map<PromptRequest, SwarmPrefixRouter>();
  kv?: (node: number, event: SimKvEvent) => void;
  constructor(private readonly context: PrefixRouterContext, n: number, precise: boolean) {
    this.routers = Array.from({ length: n }, (_, i) => new SwarmPrefixRouter({ ...context, seed: context.seed + i }, true, false, precise ? 'tick' : undefined));
    if (precise) this.kv = (node, e) => this.routers.forEach((r) => r.kv?.(node, e));
  }

  pick(now: number, request: PromptRequest): PrefixPick | undefined {
    const r = this.routers[this.context.rng.int(this.routers.length)] as SwarmPrefixRouter;
    this.owner.set(request, r);
    return r.pick(now, request);
  }

  first(now: number, pick: PrefixPick, request: PromptRequest, outcome: PrefixOutcome): void {
    this.owner.get(request)?.first(now, pick, request, outcome);
  }

  done(now: number, pick: PrefixPick, request: PromptRequest): void {
    this.owner.get(request)?.done(now, pick, request);
    this.owner.delete(request);
  }

  telemetry(): void {
    for (const r of this.routers) r.telemetry();
  }
}

/** Ours as `n` replicas, estimated or sharing precise reports. */
export function oursReplicas(n: number, precise: boolean): PrefixPolicy {
  return { id: `ours-${precise ? 'precise' : 'estimated'}-x${n}`, label: `ours, ${n} replicas, ${precise ? 'sharing precise reports' : 'each estimating'}`, create: (context) => new ReplicaRouters(context, n, precise) };
}
