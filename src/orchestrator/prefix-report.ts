/**
 * The prefix cache across a generation (docs/serve.md, "Prefix cache"): the prompt goes to the
 * route and to the first step's stage calls; the first stage's agent reports the tokens it held
 * cached, and the session's lease is released with that report so the swarm's index corrects its
 * estimate; /metrics counts both the router's estimate and the agents' reports.
 */
import type { SessionHost } from '../sessions/session-types.js';
import type { ServeMetrics } from './serve-metrics.js';

/** One generation's prompt and what its first stage reported. */
export interface PrefixReport {
  readonly prompt: string;
  /** Cached tokens the first stage's agent reported on the first step (the latest such call). */
  agentCached: number | undefined;
}

/** The session host `host` (a swarm's, or an admitted route's), releasing every lease with the agent's report when there is one. */
export function reportingHost(host: SessionHost, report: PrefixReport): SessionHost {
  return {
    ...host,
    release: (lease, outcome) => host.release(lease, report.agentCached === undefined ? outcome : { ...outcome, cachedTokens: report.agentCached }),
  };
}

/** Counts one generation's prompt tokens, the router's estimate of them cached, and the agent's report. */
export function countPrefix(metrics: ServeMetrics, promptTokens: number, routerCached: number | undefined, report: PrefixReport): void {
  metrics.promptTokens.inc(promptTokens);
  metrics.prefix.prompt += promptTokens;
  if (routerCached !== undefined) {
    metrics.cachedTokens.inc({ source: 'router' }, routerCached);
    metrics.prefix.router += routerCached;
  }
  if (report.agentCached !== undefined) {
    metrics.cachedTokens.inc({ source: 'agent' }, report.agentCached);
    metrics.prefix.agent += report.agentCached;
  }
}
