import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLlamaConfig } from '../../src/model/config.js';
import { makeModel } from '../../src/model/make-model.js';
import { openModelWeights } from '../../src/model/model-weights.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';

const tmp = () => mkdtemp(join(tmpdir(), 'hecate-make-'));
const digest = async (dir: string, files: readonly string[]) => {
  const hash = createHash('sha256');
  for (const file of files) hash.update(file).update(await readFile(join(dir, file)));
  return hash.digest('hex');
};

describe('makeModel', () => {
  it('writes the same bytes for the same options and seed, other bytes for another seed', async () => {
    const a = await makeModel(await tmp(), { seed: 5, dtype: 'f16' });
    const b = await makeModel(await tmp(), { seed: 5, dtype: 'f16' });
    const c = await makeModel(await tmp(), { seed: 6, dtype: 'f16' });
    expect(await digest(a.dir, a.files)).toBe(await digest(b.dir, b.files));
    expect(await digest(c.dir, c.files)).not.toBe(await digest(a.dir, a.files));
  });

  it('uses the real tensor names, no lm_head when tied, and a config the reader accepts', async () => {
    const untied = await makeModel(await tmp(), { layers: 2 });
    const names = (await openModelWeights(untied.dir)).names();
    expect(names).toEqual([
      'model.embed_tokens.weight',
      ...[0, 1].flatMap((l) => ['input_layernorm', 'self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'post_attention_layernorm', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'].map((t) => `model.layers.${l}.${t}.weight`)),
      'model.norm.weight',
      'lm_head.weight',
    ]);
    const tied = await makeModel(await tmp(), { layers: 2, tie: true, dtype: 'bf16' });
    expect((await openModelWeights(tied.dir)).names()).not.toContain('lm_head.weight');
    expect(await readLlamaConfig(tied.dir)).toMatchObject({ tie_word_embeddings: true, torch_dtype: 'bfloat16', num_hidden_layers: 2 });
  });

  it('refuses options that do not fit, naming the flag', async () => {
    await expect(makeModel(await tmp(), { hidden: 60, heads: 8 })).rejects.toMatchObject({ code: 'InvalidOptions', message: expect.stringContaining('--hidden (60)') });
    await expect(makeModel(await tmp(), { vocab: 100 })).rejects.toMatchObject({ message: expect.stringContaining('--vocab must be an integer ≥ 259') });
    await expect(makeModel(await tmp(), { heads: 4, kvHeads: 3 })).rejects.toMatchObject({ message: expect.stringContaining('--kv-heads (3) must divide --heads (4)') });
  });

  it('writes a byte-level tokenizer read through @huggingface/tokenizers, with a chat template', async () => {
    const model = await makeModel(await tmp(), { layers: 1 });
    const tokenizer = await loadTokenizer(model.dir);
    const text = 'Hello wörld ✓\n\ttabs  and  spaces';
    const ids = tokenizer.encode(text);
    expect(ids).toEqual([...new TextEncoder().encode(text)].map((b) => b + 3));
    expect(tokenizer.decode(ids)).toBe(text);
    expect([tokenizer.bosTokenId, tokenizer.eosTokenId]).toEqual([1, 2]);
    expect(tokenizer.decode([1, 75, 2])).toBe('H');
    expect(tokenizer.decode([1, 75, 2], false)).toBe('<s>H</s>');
    expect(tokenizer.chatTemplate).toContain('add_generation_prompt');
  });
});
