import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { endWeightBytes, heldWeightBytes, kvBytesPerToken, layerBytes, layerParameters, modelParameters, parseLlamaConfig, readLlamaConfig } from '../../src/model/config.js';
import { makeModelConfigJson } from '../../src/model/make-model.js';
import { ModelError } from '../../src/model/model-error.js';

const base = (): Record<string, unknown> => makeModelConfigJson({ layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96 });

function refusal(change: Record<string, unknown>): ModelError {
  try {
    parseLlamaConfig({ ...base(), ...change });
  } catch (error) {
    expect(error).toBeInstanceOf(ModelError);
    return error as ModelError;
  }
  throw new Error('accepted');
}

describe('parseLlamaConfig', () => {
  it('reads the fields of a Llama config, head_dim defaulting to hidden / heads', () => {
    const raw = base();
    delete raw['head_dim'];
    const config = parseLlamaConfig(raw);
    expect(config).toMatchObject({ hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16, intermediate_size: 96, vocab_size: 259, torch_dtype: 'float32', tie_word_embeddings: false, bos_token_id: 1, eos_token_id: 2 });
  });

  it('refuses another architecture naming the field', () => {
    const e = refusal({ architectures: ['MistralForCausalLM'] });
    expect(e.code).toBe('UnsupportedConfig');
    expect(e.message).toContain('"architectures" is ["MistralForCausalLM"]');
  });

  it('refuses a rope_scaling it does not implement, naming the field', () => {
    const e = refusal({ rope_scaling: { rope_type: 'llama3', factor: 8 } });
    expect(e.code).toBe('UnsupportedConfig');
    expect(e.message).toMatch(/"rope_scaling" is \{"rope_type":"llama3","factor":8\}/);
  });

  it('refuses biases and an activation other than silu', () => {
    expect(refusal({ attention_bias: true }).message).toContain('"attention_bias" is true');
    expect(refusal({ mlp_bias: true }).message).toContain('"mlp_bias" is true');
    expect(refusal({ hidden_act: 'gelu' }).message).toContain('"hidden_act" is "gelu"');
  });

  it('refuses malformed fields naming them', () => {
    expect(refusal({ hidden_size: 0 })).toMatchObject({ code: 'InvalidConfig', message: expect.stringContaining('"hidden_size" must be a positive integer, got 0') });
    expect(refusal({ num_key_value_heads: 3 }).message).toContain('"num_key_value_heads" (3) must divide "num_attention_heads" (4)');
    expect(refusal({ torch_dtype: 'int8' }).message).toContain('"torch_dtype" is "int8"');
    expect(refusal({ tie_word_embeddings: 'yes' }).message).toContain('"tie_word_embeddings" must be a boolean');
    expect(refusal({ vocab_size: undefined }).message).toContain('"vocab_size" must be a positive integer, got nothing');
  });

  it('gives a layer\'s bytes and the KV bytes per token per layer from the shapes and dtype', () => {
    const config = parseLlamaConfig({ ...base(), torch_dtype: 'bfloat16' });
    // q 64×64, k and v 32×64 each, o 64×64, MLP 3×96×64, two norms of 64
    expect(layerParameters(config)).toBe(64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 96 * 64 + 2 * 64);
    expect(layerBytes(config)).toBe(2 * layerParameters(config));
    expect(kvBytesPerToken(config)).toBe(2 * 2 * 16 * 2);
    expect(kvBytesPerToken(config, 4)).toBe(2 * 2 * 16 * 4);
  });

  it('counts the embeddings on a first stage, the final norm and head on a last, a tied head once, and the ends every agent keeps aside', () => {
    const embed = 259 * 64;
    for (const tie of [false, true]) {
      const config = parseLlamaConfig({ ...base(), tie_word_embeddings: tie });
      const layer = layerParameters(config) * 4;
      expect(heldWeightBytes(config, 3, false, false)).toBe(3 * layer);
      expect(heldWeightBytes(config, 1, true, false)).toBe(layer + embed * 4);
      // A last stage holds the head: the embeddings' matrix again when tied.
      expect(heldWeightBytes(config, 1, false, true)).toBe(layer + (64 + embed) * 4);
      expect(heldWeightBytes(config, 2, true, true)).toBe(modelParameters(config) * 4);
      expect(heldWeightBytes(config, 2, true, true, 2)).toBe(modelParameters(config) * 2);
      // The ends: what an agent holding both keeps beside its layers, at least what either end alone holds.
      expect(endWeightBytes(config)).toBe((modelParameters(config) - 2 * layerParameters(config)) * 4);
      expect(endWeightBytes(config)).toBe((tie ? embed + 64 : 2 * embed + 64) * 4);
      for (const [first, last] of [[true, false], [false, true], [true, true]] as const) expect(heldWeightBytes(config, 0, first, last)).toBeLessThanOrEqual(endWeightBytes(config));
    }
  });
});

describe('readLlamaConfig', () => {
  it('names the file when it is absent or not JSON', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hecate-config-'));
    await expect(readLlamaConfig(dir)).rejects.toMatchObject({ code: 'InvalidFile', message: expect.stringContaining(join(dir, 'config.json')) });
    await writeFile(join(dir, 'config.json'), '{ nope');
    await expect(readLlamaConfig(dir)).rejects.toMatchObject({ code: 'InvalidFile', message: expect.stringContaining('is not JSON') });
  });
});
