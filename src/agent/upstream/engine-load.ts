/**
 * An OpenAI-compatible engine's load, read from its Prometheus exposition (`GET /metrics`): the
 * requests it runs, the requests it queues and how full its KV cache is, under each engine's
 * documented names (docs/openai.md, "Health and load"). Pure: text in, numbers out.
 */

/** What one engine's metrics say about its load. */
export interface EngineLoad {
  /** Which family of names was found. */
  readonly engine: 'vllm' | 'sglang' | 'llamacpp';
  readonly running: number;
  readonly waiting: number;
  /** KV cache in use, 0-1. */
  readonly kvUsage: number;
}

/** Each engine's names for running requests, waiting requests and KV cache usage (0-1). */
const FAMILIES = Object.freeze([
  { engine: 'vllm', running: 'vllm:num_requests_running', waiting: 'vllm:num_requests_waiting', kv: 'vllm:kv_cache_usage_perc' },
  { engine: 'sglang', running: 'sglang:num_running_reqs', waiting: 'sglang:num_queue_reqs', kv: 'sglang:token_usage' },
  { engine: 'llamacpp', running: 'llamacpp:requests_processing', waiting: 'llamacpp:requests_deferred', kv: 'llamacpp:kv_cache_usage_ratio' },
] as const);

/**
 * The sum of each metric's samples (every label set: vLLM labels by model, SGLang by TP rank),
 * NaN and non-finite values skipped. Comments (`# HELP`, `# TYPE`) and malformed lines are ignored.
 */
export function sampleSums(text: string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    // name{labels} value [timestamp]; a label value may hold spaces or braces, so skip the braces as a unit.
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    const name = m[1] as string;
    sums.set(name, (sums.get(name) ?? 0) + value);
  }
  return sums;
}

/** The load an exposition text shows, from the first engine family whose running-requests metric it has; undefined for none. */
export function parseEngineLoad(text: string): EngineLoad | undefined {
  const sums = sampleSums(text);
  for (const f of FAMILIES) {
    const running = sums.get(f.running);
    if (running === undefined) continue;
    const kv = sums.get(f.kv) ?? 0;
    return { engine: f.engine, running, waiting: sums.get(f.waiting) ?? 0, kvUsage: Math.min(1, Math.max(0, kv)) };
  }
  return undefined;
}

/**
 * One number for the swarm's telemetry (`load`, 0-1): the larger of the KV cache's fill and the
 * share of `slots` taken by running and waiting requests (an engine with a queue is full).
 */
export function loadFigure(load: EngineLoad, slots: number): number {
  const busy = (load.running + load.waiting) / Math.max(1, slots);
  return Math.min(1, Math.max(load.kvUsage, busy));
}
