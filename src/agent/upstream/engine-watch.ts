/**
 * What an upstream agent knows of the engine it fronts (docs/openai.md, "Health and load"): it
 * probes the engine's `/health` (or, where that is missing, `/v1/models`) and reads its Prometheus
 * `/metrics` every `probeMs`. A failed probe or a failed forwarded call makes it unhealthy until the
 * next probe succeeds; the agent sends no heartbeats meanwhile, so the swarm's detector takes it down.
 */
import type { Clock } from '../../runtime/types.js';
import { loadFigure, parseEngineLoad, type EngineLoad } from './engine-load.js';

/** Options of {@link watchEngine}. */
export interface EngineWatchOptions {
  /** The engine's base URL, without `/v1`. */
  readonly url: string;
  /** Sent as `authorization: Bearer` on every call to it. */
  readonly key?: string;
  /** @defaultValue 1000 */
  readonly probeMs?: number;
  /** Requests the engine runs at once, for the load figure of engines whose KV usage is not published. @defaultValue 16 */
  readonly slots?: number;
  readonly clock: Clock;
  readonly log?: (line: string) => void;
}

/** The engine as its agent sees it. */
export interface EngineWatch {
  healthy(): boolean;
  /** The engine's load, 0-1, from its last metrics; undefined where it publishes none of the known names. */
  load(): number | undefined;
  /** The last metrics read, as parsed. */
  metrics(): EngineLoad | undefined;
  /** A forwarded call failed (no answer, or a 5xx): unhealthy until the next probe succeeds. */
  failed(why: string): void;
  /** Probes now; resolves when done. */
  probe(): Promise<void>;
  stop(): void;
}

/** Starts probing the engine at `options.url` (the first probe at once). */
export function watchEngine(options: EngineWatchOptions): EngineWatch {
  const base = options.url.replace(/\/+$/, '');
  const headers: Record<string, string> = options.key !== undefined ? { authorization: `Bearer ${options.key}` } : {};
  const probeMs = options.probeMs ?? 1000;
  const log = options.log ?? (() => {});
  let healthy = false;
  let metrics: EngineLoad | undefined;
  let timer: unknown;
  let stopped = false;
  let healthPath = '/health';
  const get = (path: string) => fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(Math.max(500, probeMs)), redirect: 'error' });

  const alive = async (): Promise<boolean> => {
    let response = await get(healthPath);
    // An engine without /health (not every OpenAI-compatible server has one): /v1/models from then on.
    if (response.status === 404 && healthPath === '/health') {
      await response.arrayBuffer();
      healthPath = '/v1/models';
      response = await get(healthPath);
    }
    await response.arrayBuffer();
    return response.ok;
  };

  const probe = async (): Promise<void> => {
    let ok = false;
    try {
      ok = await alive();
    } catch (error) {
      ok = false;
      if (healthy) log(`engine ${base}: ${(error as Error).message}`);
    }
    if (ok !== healthy) log(`engine ${base}: ${ok ? 'healthy' : 'unhealthy'} (${healthPath})`);
    healthy = ok;
    if (!ok) return;
    try {
      const response = await get('/metrics');
      metrics = response.ok ? parseEngineLoad(await response.text()) : (await response.arrayBuffer(), undefined);
    } catch {
      metrics = undefined;
    }
  };

  const every = (): void => {
    timer = options.clock.setTimeout(() => {
      if (stopped) return;
      void probe().finally(next);
    }, probeMs);
  };
  const next = (): void => {
    if (!stopped) every();
  };
  void probe().finally(next);

  return {
    healthy: () => healthy,
    load: () => (metrics === undefined ? undefined : loadFigure(metrics, options.slots ?? 16)),
    metrics: () => metrics,
    failed(why) {
      if (healthy) log(`engine ${base}: unhealthy until the next probe: ${why}`);
      healthy = false;
    },
    probe,
    stop() {
      stopped = true;
      if (timer !== undefined) options.clock.clearTimeout(timer);
    },
  };
}
