/**
 * What a generation learns of the prompt-prefix cache (docs/serve.md, "Prefix cache"): the
 * router's estimate of the prompt's tokens a copy holds cached (its route's `cachedTokens`), and
 * what the first stage's agent reported holding on the first step. The session's lease is released
 * with the agent's report, so the swarm's index corrects its estimate; /metrics counts both.
 */
import type { ServeMetrics } from './serve-metrics.js';

/** One generation's cache reports. */
export interface CacheReport {
  /** The router's estimate of the prompt's tokens cached on the copy that ran it. */
  readonly router: number | undefined;
  /** Cached tokens the first stage's agent reported on the first step (the latest such call). */
  readonly agent: number | undefined;
}

/** Counts one generation's prompt tokens, the router's estimate of them cached, and the agent's report. */
export function countCachedTokens(metrics: ServeMetrics, promptTokens: number, report: CacheReport): void {
  metrics.promptTokens.inc(promptTokens);
  metrics.prefix.prompt += promptTokens;
  if (report.router !== undefined) {
    metrics.cachedTokens.inc({ source: 'router' }, report.router);
    metrics.prefix.router += report.router;
  }
  if (report.agent !== undefined) {
    metrics.cachedTokens.inc({ source: 'agent' }, report.agent);
    metrics.prefix.agent += report.agent;
  }
}
