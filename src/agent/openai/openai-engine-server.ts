/**
 * `hecate-node agent --model DIR --openai` without `--join`: the reference engine on a whole model
 * behind the OpenAI API alone (engine-openai-routes.ts), an engine another swarm's
 * `agent --upstream` fronts (docs/openai.md, "The reference engine as an upstream").
 */
import { createHttpApp, listen } from '../../net/http-app.js';
import { serverTls, type TlsOptions } from '../../net/tls-options.js';
import { systemClock } from '../../runtime/clock.js';
import type { TimeSource } from '../../runtime/types.js';
import { registerEngineOpenAIRoutes } from './engine-openai-routes.js';
import type { WholeModel } from './whole-model.js';

/** Options of {@link startOpenAIEngine}. */
export interface OpenAIEngineOptions {
  readonly model: WholeModel;
  /** @defaultValue 0 (any free port) */
  readonly port?: number;
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
  readonly apiKey?: string;
  readonly tls?: TlsOptions;
  /** @defaultValue systemClock */
  readonly clock?: TimeSource;
}

/** A running engine server. */
export interface RunningOpenAIEngine {
  readonly url: string;
  stop(): Promise<void>;
}

/** Serves `options.model` over the OpenAI API and listens. */
export async function startOpenAIEngine(options: OpenAIEngineOptions): Promise<RunningOpenAIEngine> {
  const app = createHttpApp(serverTls(options.tls));
  registerEngineOpenAIRoutes(app, { model: options.model, clock: options.clock ?? systemClock, ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}) });
  const url = await listen(app, options.host ?? '127.0.0.1', options.port ?? 0);
  return { url, stop: () => app.close() };
}
