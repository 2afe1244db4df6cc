/**
 * W7, prefix sharing: request streams whose prompts share prefixes, generated up front from a
 * seed so every policy sees the same requests (docs/prefix-cache.md, "Simulation"). Token ids
 * are real sequences (so the library's router hashes them as it would a client's), and each
 * request also carries the chained block hashes of its prompt and of prompt + answer.
 */
import { blockHashes } from './block-cache.js';
import { createRng, deriveSeed, type Rng } from './rng.js';

/** One request of a W7 workload. */
export interface PromptRequest {
  /** Offset of its arrival from the first one, in units of the mean gap (scaled by the rate). */
  readonly at: number;
  /** The prompt's token ids. */
  readonly ids: Uint32Array;
  /** Block hashes of the prompt. */
  readonly blocks: Float64Array;
  /** Block hashes of the prompt and answer together (what the node caches once it has answered). */
  readonly fullBlocks: Float64Array;
  /** The token ids of the prompt and answer together (what a precise engine reports of `fullBlocks`). */
  readonly fullIds: Uint32Array;
  readonly outTokens: number;
  /** The prefix group or session it belongs to (-1 for none). */
  readonly group: number;
}

/** A W7 workload: the requests, in arrival order, at unit mean gap. */
export interface PrefixWorkload {
  readonly id: string;
  readonly label: string;
  readonly requests: readonly PromptRequest[];
}

/** Which W7 workload, and at what scale. */
export interface PrefixWorkloadSpec {
  readonly id: 'w7a-shared-prefix' | 'w7b-multi-turn' | 'w7c-little-sharing' | 'w7d-skew';
  readonly label: string;
  /** Builds it; `scale` (≤ 1) shrinks the request count for fast checks. */
  build(seed: number, scale?: number): PrefixWorkload;
}

const VOCAB = 128_000;

/** `n` random token ids. */
export function tokens(rng: Rng, n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = rng.int(VOCAB);
  return out;
}

/** The token ids of `parts`, one after another. */
export function concat(parts: readonly Uint32Array[]): Uint32Array {
  const out = new Uint32Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A request of a prompt and its answer, with their block hashes. */
export function request(at: number, prompt: Uint32Array, answer: Uint32Array, group: number): PromptRequest {
  const fullIds = concat([prompt, answer]);
  return { at, ids: prompt, blocks: blockHashes(prompt), fullBlocks: blockHashes(fullIds), fullIds, outTokens: answer.length, group };
}

/** Poisson arrival offsets at unit rate. */
export function arrivals(rng: Rng, n: number): number[] {
  let t = 0;
  return Array.from({ length: n }, () => (t += rng.exp(1)));
}

function shuffle<T>(rng: Rng, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
  }
  return xs;
}

/** Zipf weights over `n` ranks with exponent `s`, as cumulative shares. */
export function zipfCdf(n: number, s: number): number[] {
  const w = Array.from({ length: n }, (_, k) => 1 / (k + 1) ** s);
  const total = w.reduce((a, b) => a + b, 0);
  let acc = 0;
  return w.map((x) => (acc += x / total));
}

/** `groups` system prompts of `systemTokens` random ids. */
export function groupsOf(rng: Rng, groups: number, systemTokens: number): Uint32Array[] {
  return Array.from({ length: groups }, () => tokens(rng, systemTokens));
}

/**
 * W7a: SGLang's generated-shared-prefix scaled down: 32 groups × 16 prompts of a 2,048-token
 * system prompt and a 128-token question, 128 output tokens, shuffled; four such rounds of fresh
 * groups one after another (2,048 requests), so a rate is held long enough to measure.
 */
export const sharedPrefix: PrefixWorkloadSpec = {
  id: 'w7a-shared-prefix',
  label: 'W7a shared prefix: 4 rounds of 32 groups × 16 prompts, 2,048 + 128 tokens in, 128 out',
  build(seed, scale = 1) {
    const rng = createRng(deriveSeed(seed, this.id));
    const perGroup = Math.max(2, Math.round(16 * scale));
    const rounds = Math.max(1, Math.round(4 * scale));
    const out: PromptRequest[] = [];
    let t = 0;
    for (let round = 0; round < rounds; round++) {
      const systems = groupsOf(rng, 32, 2048);
      const order = shuffle(rng, systems.flatMap((_, g) => Array.from({ length: perGroup }, () => g)));
      for (const g of order) out.push(request((t += rng.exp(1)), concat([systems[g] as Uint32Array, tokens(rng, 128)]), tokens(rng, 128), round * 32 + g));
    }
    return { id: this.id, label: this.label, requests: out };
  },
};

/**
 * W7b: multi-turn chat, 48 sessions of 4–12 turns; each turn asks 64–256 new tokens and gets 128
 * back, and its prompt is the whole history (a 256-token system prompt, every earlier question and
 * answer). Sessions start at random and a turn follows its answer after a think time (10 mean gaps).
 */
export const multiTurn: PrefixWorkloadSpec = {
  id: 'w7b-multi-turn',
  label: 'W7b multi-turn: 48 sessions of 4–12 turns, each prompt the whole history',
  build(seed, scale = 1) {
    const rng = createRng(deriveSeed(seed, this.id));
    const sessions = Math.max(4, Math.round(48 * scale));
    const out: PromptRequest[] = [];
    let start = 0;
    for (let s = 0; s < sessions; s++) {
      start += rng.exp(8);
      let history = tokens(rng, 256);
      let t = start;
      const turns = 4 + rng.int(9);
      for (let k = 0; k < turns; k++) {
        const prompt = concat([history, tokens(rng, 64 + rng.int(193))]);
        const answer = tokens(rng, 128);
        out.push(request(t, prompt, answer, s));
        history = concat([prompt, answer]);
        t += 10 + rng.exp(10);
      }
    }
    out.sort((a, b) => a.at - b.at);
    return { id: this.id, label: this.label, requests: out };
  },
};

/** W7c: little sharing on two copies: 26% of 384 requests share one of 4 system prompts of 1,024 tokens; the rest are 512–2,048 unique tokens. */
export const littleSharing: PrefixWorkloadSpec = {
  id: 'w7c-little-sharing',
  label: 'W7c little sharing: 2 copies, 26% share a prefix',
  build(seed, scale = 1) {
    const rng = createRng(deriveSeed(seed, this.id));
    const n = Math.max(40, Math.round(384 * scale));
    const systems = groupsOf(rng, 4, 1024);
    const at = arrivals(rng, n);
    return {
      id: this.id,
      label: this.label,
      requests: at.map((t) => {
        if (rng.next() < 0.26) {
          const g = rng.int(systems.length);
          return request(t, concat([systems[g] as Uint32Array, tokens(rng, 128)]), tokens(rng, 128), g);
        }
        return request(t, tokens(rng, 512 + rng.int(1537)), tokens(rng, 128), -1);
      }),
    };
  },
};

/** W7d's skew: the Zipf exponent of group popularity. */
export const W7D_ZIPF = 2;

/** W7d: skew, 32 groups of 2,048-token system prompts chosen Zipf({@link W7D_ZIPF}) by popularity, 6,144 requests, 128-token questions and answers. */
export const skewed: PrefixWorkloadSpec = {
  id: 'w7d-skew',
  label: `W7d skew: Zipf(${W7D_ZIPF})-popular groups, 6,144 requests`,
  build(seed, scale = 1) {
    const rng = createRng(deriveSeed(seed, this.id));
    const n = Math.max(64, Math.round(6144 * scale));
    const systems = groupsOf(rng, 32, 2048);
    const cdf = zipfCdf(systems.length, W7D_ZIPF);
    const at = arrivals(rng, n);
    return {
      id: this.id,
      label: this.label,
      requests: at.map((t) => {
        const u = rng.next();
        let g = cdf.findIndex((c) => u < c);
        if (g < 0) g = cdf.length - 1;
        return request(t, concat([systems[g] as Uint32Array, tokens(rng, 128)]), tokens(rng, 128), g);
      }),
    };
  },
};

/** Every W7 workload, in report order. */
export const PREFIX_WORKLOADS: readonly PrefixWorkloadSpec[] = [sharedPrefix, multiTurn, littleSharing, skewed];
