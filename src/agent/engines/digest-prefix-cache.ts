/**
 * The stand-in agent's prefix cache (docs/serve.md, "Prefix cache"): what a real engine's KV cache
 * would hold of the prompts it ran, as chained hashes of 64-character blocks (16 tokens at four
 * characters a token) per model, evicted least-recently-used once the tokens held would need more
 * than the memory the agent declared for them. A prompt's cached tokens are its longest run of
 * leading blocks held; the agent charges prefill time only for the rest.
 */
import { mix } from '../../core/digest-model.js';
import { hashText } from '../../wire/digest.js';

/** Characters per block (16 tokens at four characters a token). */
export const AGENT_BLOCK_CHARS = 64;
/** Tokens one block stands for. */
export const AGENT_BLOCK_TOKENS = AGENT_BLOCK_CHARS / 4;
/** KV memory one token takes over all of a model's layers when nothing says otherwise, GB: Llama 3 8B in 16-bit precision (128 KB). */
export const AGENT_KV_GB_PER_TOKEN = 0.000128;

/** A per-agent LRU of prompt blocks, bounded by tokens of KV memory. */
export class AgentPrefixCache {
  private readonly blocks = new Map<string, number>();
  /** Tokens' worth of KV memory held now (each block weighs its tokens × the layer share of its stage). */
  private held = 0;

  /** @param capacityGb the KV memory the agent declared for prefixes; @param kvGbPerToken a whole model's KV per token */
  constructor(readonly capacityGb: number, readonly kvGbPerToken: number = AGENT_KV_GB_PER_TOKEN) {}

  /** Blocks held now. */
  get size(): number {
    return this.blocks.size;
  }

  /** GB of KV memory the blocks held take. */
  get usedGb(): number {
    return this.held;
  }

  /**
   * The prompt's cached tokens for layers `[layerStart, layerEnd)` of a model of `modelLayers`
   * layers (at most `tokens`), then holds all of its blocks (most recently used), evicting the
   * least recently used past the capacity.
   */
  serve(modelId: string, layerStart: number, layerEnd: number, modelLayers: number, prompt: string, tokens: number): number {
    const keys = blockKeys(modelId, layerStart, layerEnd, prompt);
    let matched = 0;
    while (matched < keys.length && this.blocks.has(keys[matched] as string)) matched++;
    const weight = (AGENT_BLOCK_TOKENS * this.kvGbPerToken * (layerEnd - layerStart)) / Math.max(modelLayers, layerEnd);
    for (const key of keys) {
      const old = this.blocks.get(key);
      if (old !== undefined) {
        this.blocks.delete(key);
        this.held -= old;
      }
      this.blocks.set(key, weight);
      this.held += weight;
    }
    for (const [key, w] of this.blocks) {
      if (this.held <= this.capacityGb) break;
      this.blocks.delete(key);
      this.held -= w;
    }
    return Math.min(matched * AGENT_BLOCK_TOKENS, tokens);
  }
}

/** The chained keys of every full block of `prompt`, for one model's layers on this agent. */
export function blockKeys(modelId: string, layerStart: number, layerEnd: number, prompt: string): string[] {
  const out: string[] = [];
  let a = mix(hashText(modelId, 0x51ed), layerStart * 65_537 + layerEnd);
  let b = hashText(modelId, 0x2f7a);
  for (let at = 0; at + AGENT_BLOCK_CHARS <= prompt.length; at += AGENT_BLOCK_CHARS) {
    const block = prompt.slice(at, at + AGENT_BLOCK_CHARS);
    a = hashText(block, a);
    b = hashText(block, b ^ 0x9e3779b9);
    out.push(`${a.toString(36)}.${b.toString(36)}`);
  }
  return out;
}
