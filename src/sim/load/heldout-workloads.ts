/**
 * The held-out prefix workloads H1 and H2 (docs/prefix-cache.md, "Held-out workloads"): fixed by
 * the prefix-routing issue's text before the router was changed for them, each with its own swarm
 * and rate. Built like W7's (token ids from a seed, every policy sees the same requests), run by
 * the same engine (`prefix-engine.ts`).
 *
 * - **H1**: Zipf(1.1)-popular groups over 64 groups, each prompt a 4,096-token system prompt and a
 *   256-token question (128 tokens out), on 6 single-stage copies that each serve one request at
 *   a time, two of them twice as fast; Poisson arrivals at 0.85 of round-robin's capacity.
 * - **H2**: on-off bursts, 2 s at three times the mean rate then 4 s idle, over 16 groups of
 *   2,048-token prompts (a 128-token question and 128 out each), on 4 copies of 4 slots each;
 *   the mean rate is 0.85 of round-robin's capacity (the issue gives the shape, not the rate).
 *
 * Round-robin's capacity is its uncached capacity: it sends every copy an equal share, so it holds
 * as long as the slowest copy does, `copies × slots ÷ (prefill of the whole prompt + decode)` of
 * that copy.
 */
import { buildTopology, type BuiltTopology, type LoadTopology } from './load-topology.js';
import { DECODE_MS_PER_TOKEN, PREFILL_MS_PER_TOKEN, W7_MODEL } from './prefix-constants.js';
import { concat, groupsOf, request, tokens, zipfCdf, type PrefixWorkload, type PromptRequest } from './prefix-workloads.js';
import { createRng, deriveSeed } from './rng.js';

/** A node holding the whole model (16 GB of weights) and exactly the KV reserve the engine's cache models (3.2 GB). */
const WHOLE_MODEL_GB = W7_MODEL.layers * W7_MODEL.layerGb + W7_MODEL.layers * W7_MODEL.kvReserveGb;

/** H1's swarm: six single-stage copies, one request at a time, the last two twice as fast. */
export const H1_TOPOLOGY: LoadTopology = Object.freeze({
  nodes: Array.from({ length: 6 }, (_, i) => ({ id: `h${i + 1}`, memoryGb: WHOLE_MODEL_GB, score: i >= 4 ? 2 : 1, slots: 1 })),
  model: { ...W7_MODEL, pipelines: 6 },
  msPerLayer: PREFILL_MS_PER_TOKEN / W7_MODEL.layers,
  hopMs: 1,
});

/** H2's swarm: four single-stage copies of one speed, 4 slots each. */
export const H2_TOPOLOGY: LoadTopology = Object.freeze({
  nodes: Array.from({ length: 4 }, (_, i) => ({ id: `b${i + 1}`, memoryGb: WHOLE_MODEL_GB, score: 1, slots: 4 })),
  model: { ...W7_MODEL, pipelines: 4 },
  msPerLayer: PREFILL_MS_PER_TOKEN / W7_MODEL.layers,
  hopMs: 1,
});

/** Round-robin's uncached capacity on `topology` for prompts of `promptTokens` and answers of `outTokens`, requests per second. */
export function roundRobinCapacity(topology: BuiltTopology, promptTokens: number, outTokens: number): number {
  const serviceMs = promptTokens * PREFILL_MS_PER_TOKEN + outTokens * DECODE_MS_PER_TOKEN;
  let slowest = Infinity;
  for (const p of topology.pipelines) {
    for (const s of p.stages) {
      const node = topology.nodes[s.node] as { slots: number; score: number };
      slowest = Math.min(slowest, (1000 * node.slots * node.score) / (serviceMs * (s.layers / topology.spec.model.layers)));
    }
  }
  return topology.pipelines.length * slowest;
}

/** A held-out workload: its swarm, its rate and its requests. */
export interface HeldoutSpec {
  readonly id: 'h1-zipf-hetero' | 'h2-on-off';
  readonly label: string;
  readonly topology: LoadTopology;
  /** Mean arrivals per second. */
  ratePerS(topology: BuiltTopology): number;
  /** Builds it at `ratePerS`; `scale` (≤ 1) shrinks the request count. */
  build(seed: number, ratePerS: number, scale?: number): PrefixWorkload;
}

/** H1's shape. */
export const H1 = Object.freeze({ groups: 64, zipf: 1.1, systemTokens: 4096, questionTokens: 256, outTokens: 128, requests: 4096, load: 0.85 });
/** H2's shape. */
export const H2 = Object.freeze({ groups: 16, systemTokens: 2048, questionTokens: 128, outTokens: 128, requests: 6144, load: 0.85, onS: 2, offS: 4, burst: 3 });

/** H1: Zipf(1.1) over 64 groups, 4,096 + 256 tokens in, 6 single-slot copies (two twice as fast), Poisson at 0.85 of round-robin's capacity. */
export const heldoutZipf: HeldoutSpec = {
  id: 'h1-zipf-hetero',
  label: 'H1 Zipf(1.1) over 64 groups, 4,096 + 256 tokens in, 6 single-slot copies (2 twice as fast)',
  topology: H1_TOPOLOGY,
  ratePerS: (topology) => H1.load * roundRobinCapacity(topology, H1.systemTokens + H1.questionTokens, H1.outTokens),
  build(seed, _ratePerS, scale = 1) {
    const rng = createRng(deriveSeed(seed, this.id));
    const n = Math.max(64, Math.round(H1.requests * scale));
    const systems = groupsOf(rng, H1.groups, H1.systemTokens);
    const cdf = zipfCdf(H1.groups, H1.zipf);
    const out: PromptRequest[] = [];
    let t = 0;
    for (let i = 0; i < n; i++) {
      t += rng.exp(1);
      const g = pickGroup(cdf, rng.next());
      out.push(request(t, concat([systems[g] as Uint32Array, tokens(rng, H1.questionTokens)]), tokens(rng, H1.outTokens), g));
    }
    return { id: this.id, label: this.label, requests: out };
  },
};

/**
 * H2: on-off bursts (2 s at 3 × the mean rate, then 4 s idle) over 16 groups of 2,048-token
 * prompts, 4 copies of 4 slots, the mean rate 0.85 of round-robin's capacity. Offsets are in mean
 * gaps at `ratePerS`, as every workload's: inside a burst, Poisson at three times the rate.
 */
export const heldoutBursts: HeldoutSpec = {
  id: 'h2-on-off',
  label: 'H2 on-off bursts (2 s at 3× the mean, 4 s idle), 16 groups of 2,048 tokens, 4 copies × 4 slots',
  topology: H2_TOPOLOGY,
  ratePerS: (topology) => H2.load * roundRobinCapacity(topology, H2.systemTokens + H2.questionTokens, H2.outTokens),
  build(seed, ratePerS, scale = 1) {
    const rng = createRng(deriveSeed(seed, this.id));
    const n = Math.max(64, Math.round(H2.requests * scale));
    const systems = groupsOf(rng, H2.groups, H2.systemTokens);
    const on = H2.onS * ratePerS; // a burst's length, in mean gaps
    const cycle = (H2.onS + H2.offS) * ratePerS;
    const out: PromptRequest[] = [];
    let start = 0;
    let t = 0;
    for (let i = 0; i < n; i++) {
      t += rng.exp(1 / H2.burst);
      if (t - start >= on) {
        start += cycle;
        t = start + rng.exp(1 / H2.burst);
      }
      const g = rng.int(H2.groups);
      out.push(request(t, concat([systems[g] as Uint32Array, tokens(rng, H2.questionTokens)]), tokens(rng, H2.outTokens), g));
    }
    return { id: this.id, label: this.label, requests: out };
  },
};

function pickGroup(cdf: readonly number[], u: number): number {
  const g = cdf.findIndex((c) => u < c);
  return g < 0 ? cdf.length - 1 : g;
}

/** Both held-out workloads, in report order. */
export const HELDOUT_WORKLOADS: readonly HeldoutSpec[] = [heldoutZipf, heldoutBursts];

/** A held-out workload's swarm, planned. */
export function heldoutTopology(spec: HeldoutSpec): BuiltTopology {
  return buildTopology(spec.topology);
}

