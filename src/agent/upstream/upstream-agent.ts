/**
 * `hecate-node agent --upstream URL`: an agent that fronts an OpenAI-compatible engine (vLLM,
 * SGLang, llama.cpp's server, TGI, Ollama) as one whole copy of its model (docs/openai.md). It joins
 * and heartbeats as every agent does, offering the memory of every layer, forwards the
 * orchestrator's completions to the engine (upstream-route.ts), withholds its heartbeats while the
 * engine is unhealthy and reports the engine's load with each answer (engine-watch.ts).
 */
import { startAgent, type AgentOptions, type RunningAgent } from '../agent.js';
import { systemClock } from '../../runtime/clock.js';
import { ServeError } from '../../wire/serve-error.js';
import { loadChatTemplate, type ChatTemplate } from '../../wire/chat-prompt.js';
import { watchEngine, type EngineWatch } from './engine-watch.js';
import { registerUpstreamRoutes } from './upstream-route.js';

/** Options of {@link startUpstreamAgent}: an agent's, and the engine it fronts. */
export interface UpstreamAgentOptions extends Omit<AgentOptions, 'routes' | 'healthy'> {
  /** The engine's base URL (`http://host:8000`; a trailing `/v1` is dropped). */
  readonly upstream: string;
  /** The engine's API key (`--upstream-key-file`), sent as `authorization: Bearer`. */
  readonly upstreamKey?: string;
  /** The engine's model id. @defaultValue the first model of its `GET /v1/models` */
  readonly upstreamModel?: string;
  /** The model's `tokenizer_config.json`: its chat template lets any engine continue a chat (docs/openai.md, "Failover"). */
  readonly tokenizerConfig?: string;
  /** @defaultValue 1000 */
  readonly probeMs?: number;
}

/** A running upstream agent. */
export interface RunningUpstreamAgent extends RunningAgent {
  readonly engine: EngineWatch;
}

/** Starts an agent in front of the engine at `options.upstream`. */
export async function startUpstreamAgent(options: UpstreamAgentOptions): Promise<RunningUpstreamAgent> {
  const engine = options.upstream.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (!/^https?:\/\/[^/\s]+/.test(engine)) throw new ServeError('InvalidRequest', 400, `upstream: expected the engine's URL (http://host:port), got "${options.upstream}"`, { field: 'upstream' });
  const clock = options.clock ?? systemClock;
  const template: ChatTemplate | undefined = options.tokenizerConfig === undefined ? undefined : await loadChatTemplate(options.tokenizerConfig);
  const watch = watchEngine({ url: engine, ...(options.upstreamKey !== undefined ? { key: options.upstreamKey } : {}), ...(options.probeMs !== undefined ? { probeMs: options.probeMs } : {}), ...(options.slots !== undefined ? { slots: options.slots } : {}), clock, ...(options.log !== undefined ? { log: options.log } : {}) });
  let model = options.upstreamModel;
  const modelOf = async (): Promise<string> => {
    if (model !== undefined) return model;
    const response = await fetch(`${engine}/v1/models`, { headers: options.upstreamKey !== undefined ? { authorization: `Bearer ${options.upstreamKey}` } : {}, signal: AbortSignal.timeout(5000) });
    const listed = (await response.json().catch(() => undefined)) as { data?: { id?: unknown }[] } | undefined;
    const id = listed?.data?.[0]?.id;
    if (typeof id !== 'string') throw new ServeError('StageFailed', 502, `engine ${engine}: GET /v1/models named no model (${response.status}); give --upstream-model`);
    model = id;
    return id;
  };
  await watch.probe();
  let agent: RunningAgent;
  try {
    agent = await startAgent({
      ...options,
      healthy: () => watch.healthy(),
      routes: (app) => registerUpstreamRoutes(app, { engine, ...(options.upstreamKey !== undefined ? { key: options.upstreamKey } : {}), model: modelOf, watch, ...(template !== undefined ? { template } : {}) }),
    });
  } catch (error) {
    watch.stop();
    throw error;
  }
  return {
    ...agent,
    id: agent.id,
    url: agent.url,
    joined: agent.joined,
    orchestrator: () => agent.orchestrator(),
    engine: watch,
    async stop() {
      watch.stop();
      await agent.stop();
    },
  };
}
