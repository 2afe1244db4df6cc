/**
 * The library's own router in W7: a real `Swarm` on the simulation's clock, every route reserved
 * and released when the answer is done with its latency. Cache-blind is today's cost (the
 * prompt's length as `tokens`, nothing cached); ours passes the prompt's token ids to `route` and
 * releases with the cached tokens the first node reported; its swarm has the prefix-cache plug-in
 * (`hecate-swarm/prefix`), cache-blind's has none.
 */
import { prefixCache } from '../../prefix/index.js';
import { createSwarm } from '../../runtime/index.js';
import type { Lease } from '../../runtime/types.js';
import type { PrefixOutcome, PrefixPick, PrefixPolicy, PrefixRouter, PrefixRouterContext } from './prefix-router.js';
import type { PromptRequest } from './prefix-workloads.js';
import { routeOrNone, simRoute } from './load-topology.js';

interface Open {
  readonly lease: Lease;
  readonly t0: number;
  cachedTokens: number;
}

class SwarmPrefixRouter implements PrefixRouter {
  private readonly swarm;
  private readonly open = new Map<PromptRequest, Open>();
  constructor(private readonly context: PrefixRouterContext, private readonly withPrompt: boolean, declareSlots = false) {
    const { topology } = context;
    const profiles = declareSlots ? topology.profiles.map((p, i) => ({ ...p, slots: (topology.nodes[i] as { slots: number }).slots })) : topology.profiles;
    this.swarm = createSwarm(profiles, { models: [topology.spec.model] }, { clock: context.clock, seed: context.seed, ...(withPrompt ? { prefixCache: prefixCache() } : {}) });
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

  telemetry(): void {}
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
