/**
 * The constants of the prefix-cache simulation (W7), fixed before any policy was tuned, with
 * where each comes from (docs/prefix-cache.md, "Simulation"):
 *
 * - Prefill and decode cost per token: TensorRT-LLM's published throughput table
 *   ("Performance Overview", Llama 3.1 8B, H100 SXM 80GB, TP1, FP8): 28,312 output tokens/s at
 *   128 input / 128 output tokens and 3,450 at 2,048 / 128. Read as a linear cost per request,
 *   `input × p + output × d`: 128p + 128d = 1/221.2 s and 2,048p + 128d = 1/26.95 s, so
 *   p = 0.01697 ms per prompt token and d = 0.01835 ms per output token of a full batch.
 * - KV bytes per token: Llama 3.1 8B's architecture, 32 layers × 8 KV heads × 128 head dims,
 *   keys and values in bf16: 2 × 32 × 8 × 128 × 2 = 131,072 bytes, 4,096 per layer.
 */
import type { LoadTopology } from './load-topology.js';

/** Compute time of one uncached prompt token through the whole model on a node of score 1, ms. */
export const PREFILL_MS_PER_TOKEN = 0.01697;
/** Compute time of one output token through the whole model in a full batch, node of score 1, ms. */
export const DECODE_MS_PER_TOKEN = 0.01835;
/** KV cache bytes of one token in one layer (bf16 keys and values, 8 heads of 128). */
export const KV_BYTES_PER_TOKEN_LAYER = 2 * 8 * 128 * 2;
/** Tokens per cache block, the unit of matching and eviction (vLLM's default block size). */
export const BLOCK_TOKENS = 16;

/** The p99 TTFT a throughput is measured at, ms (W7a). */
export const TTFT_LIMIT_MS = 500;
/** How long a client waits for its first token before it gives up, ms (a request succeeds when its first token comes sooner). */
export const CLIENT_TIMEOUT_MS = 2000;

/**
 * Llama 3.1 8B as the planner sees it: 32 layers of 0.5 GB (16 GB of bf16 weights) and 0.1 GB of
 * KV reserve per layer, a prefix cache of about 24,400 tokens per copy (scaled down with the
 * workloads, so that one copy holds about a third of W7a's 32 system prompts and round-robin evicts).
 */
export const W7_MODEL = Object.freeze({ id: 'llama-3.1-8b', layers: 32, layerGb: 0.5, kvReserveGb: 0.1, kvGbPerToken: (32 * KV_BYTES_PER_TOKEN_LAYER) / 1e9 });

/** W7's swarm: eight 12 GB machines of one speed, four copies of two 16-layer stages. */
export const W7_TOPOLOGY: LoadTopology = Object.freeze({
  nodes: Array.from({ length: 8 }, (_, i) => ({ id: `g${i + 1}`, memoryGb: 12, score: 1 })),
  model: { ...W7_MODEL, pipelines: 4 },
  msPerLayer: PREFILL_MS_PER_TOKEN / 32,
  hopMs: 1,
});

/** W7c's swarm: the first four machines, two copies. */
export const W7C_TOPOLOGY: LoadTopology = Object.freeze({
  ...W7_TOPOLOGY,
  nodes: W7_TOPOLOGY.nodes.slice(0, 4),
  model: { ...W7_MODEL, pipelines: 2 },
});

/** Cache blocks a node holding `layers` layers keeps in its KV reserve. */
export function nodeCacheBlocks(layers: number, kvReserveGb: number = W7_MODEL.kvReserveGb): number {
  return Math.floor((layers * kvReserveGb * 1e9) / (layers * KV_BYTES_PER_TOKEN_LAYER) / BLOCK_TOKENS);
}
