/**
 * The hook the Swarm calls for the prefix-cache index (docs/prefix-cache.md). The index itself is
 * its own entry, `hecate-swarm/prefix`, plugged in as `createSwarm(…, …, { prefixCache:
 * prefixCache() })`; the root keeps only this interface, the host the Swarm hands the plug-in, and
 * the no-op it runs without one: a prompt then only sets a request's `tokens`, routes carry no
 * `cachedTokens`, a release's `cachedTokens` is accepted and ignored, and the counters stay zero.
 */
import type { ResolvedRequest } from '../core/cost.js';
import type { Prompt } from '../core/prompt.js';
import type { NodeProfile, Route, SwarmPlan } from '../core/types.js';
import type { TelemetryTable } from './telemetry-table.js';

/** What the plug-in reads of the Swarm. */
export interface PrefixHost {
  readonly table: TelemetryTable;
  plan(): SwarmPlan;
  /** A member's memory, for the copies' KV capacity. */
  memoryOf(nodeId: string): number | undefined;
  /** A member's declared slots (concurrent requests), if it declares them. */
  slotsOf(nodeId: string): number | undefined;
  /** Whether a lease is still open (the index forgets the estimates of leases gone). */
  isOpen(leaseId: string): boolean;
}

/** The index's counters since the swarm started (plain numbers; nothing of any prompt). All zero without the plug-in. */
export interface PrefixStats {
  /** Routes of a request with a prompt that the index read and learnt. */
  readonly requests: number;
  /** Their tokens. */
  readonly promptTokens: number;
  /** Of those, the tokens the index estimated cached on the chosen copy (`route.cachedTokens`). */
  readonly estimatedTokens: number;
  /** Releases that reported `cachedTokens`. */
  readonly reports: number;
  /** The tokens they reported cached, and what the index had estimated for the same requests. */
  readonly reportedTokens: number;
  readonly reportedEstimate: number;
  /** Routes the imbalance guard sent by load instead of by cache. */
  readonly guarded: number;
  /** Blocks held in the index now, over every copy. */
  readonly blocks: number;
}

/**
 * One swarm's prefix-cache index as the Swarm drives it. Steps are synchronous and one at a
 * time: `begin` takes a request (false: route as without a prompt), `choose` picks (again when a
 * stall re-routes), `finish` records and prices the route.
 */
export interface PrefixHook {
  begin(request: { readonly prompt?: Prompt; readonly cache?: boolean }, modelId: string, r: ResolvedRequest): boolean;
  choose(modelId: string, r: ResolvedRequest, byLoad: () => Route): Route;
  finish<R extends Route>(route: R, leaseId?: string): R & { readonly cachedTokens: number };
  /** A lease ended, with the copy's report of its cached tokens and the latency observed, if given. */
  released(leaseId: string, cachedTokens: number | undefined, latencyMs?: number): void;
  /** A session's route after a failover or a resume: its copy learns the prompt. */
  learn(route: Route, request: { readonly prompt?: Prompt; readonly cache?: boolean }, tokens: number): void;
  /** A node went down or left. */
  nodeLost(nodeId: string): void;
  /** The statechart adopted a plan (growth, retirement). */
  adopt(plan: SwarmPlan): void;
  stats(): PrefixStats;
}

/**
 * What `SwarmOptions.prefixCache` takes: made by `prefixCache(options)` of `hecate-swarm/prefix`,
 * which checked the options. Each swarm attaches it once and gets its own index.
 */
export interface PrefixPlugin {
  readonly kind: 'prefixCache';
  attach(host: PrefixHost): PrefixHook;
}

const ZERO: PrefixStats = Object.freeze({ requests: 0, promptTokens: 0, estimatedTokens: 0, reports: 0, reportedTokens: 0, reportedEstimate: 0, guarded: 0, blocks: 0 });

/** The hook without a plug-in: no request is taken, nothing is learnt, the counters stay zero. */
export const NO_PREFIX: PrefixHook = Object.freeze({
  begin: () => false,
  choose: (_m: string, _r: ResolvedRequest, byLoad: () => Route) => byLoad(),
  finish: <R extends Route>(route: R) => ({ ...route, cachedTokens: 0 }),
  released: () => undefined,
  learn: () => undefined,
  nodeLost: () => undefined,
  adopt: () => undefined,
  stats: () => ZERO,
});

/** The host over a Swarm's routing view and the statechart's context (members' profiles, the plan). */
export function swarmPrefixHost(
  table: TelemetryTable,
  context: () => { readonly plan: SwarmPlan; readonly members: ReadonlyMap<string, { readonly profile: NodeProfile }> },
  isOpen: (leaseId: string) => boolean,
): PrefixHost {
  return {
    table,
    plan: () => context().plan,
    memoryOf: (id) => context().members.get(id)?.profile.memoryGb,
    slotsOf: (id) => {
      const slots = context().members.get(id)?.profile.slots;
      return typeof slots === 'number' && slots > 0 ? slots : undefined;
    },
    isOpen,
  };
}
