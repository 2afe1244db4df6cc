import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from '../../src/model/half-float.js';
import { makeModel } from '../../src/model/make-model.js';
import { openModelWeights } from '../../src/model/model-weights.js';
import { readSafetensorsHeader } from '../../src/model/safetensors.js';
import { writeSafetensors } from '../../src/model/safetensors-writer.js';

const tmp = () => mkdtemp(join(tmpdir(), 'hecate-st-'));

describe('half floats', () => {
  it('round-trips every f16 and bf16 bit pattern that is not NaN', () => {
    const wrong: string[] = [];
    for (let bits = 0; bits < 0x10000; bits++) {
      const h = f16ToF32(bits);
      if (!Number.isNaN(h) && f32ToF16(h) !== bits) wrong.push(`f16 ${bits}`);
      const b = bf16ToF32(bits);
      if (!Number.isNaN(b) && f32ToBf16(b) !== bits) wrong.push(`bf16 ${bits}`);
    }
    expect(wrong).toEqual([]);
  });

  it('rounds to nearest, ties to even', () => {
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // halfway between 1 and the next half: even is 1
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(f32ToF16(65520)).toBe(0x7c00); // rounds up past the largest half: infinity
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80);
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
  });
});

describe('safetensors', () => {
  it('round-trips f32 exactly and f16 / bf16 to their nearest values, reading only the tensor asked for', async () => {
    const dir = await tmp();
    const values = Float32Array.from({ length: 24 }, (_, i) => (i - 11.3) / 7);
    const path = join(dir, 'model.safetensors');
    await writeSafetensors(path, [
      { name: 'a', dtype: 'F32', shape: [4, 6], values },
      { name: 'b', dtype: 'F16', shape: [24], values },
      { name: 'c', dtype: 'BF16', shape: [2, 12], values },
    ], { format: 'pt' });
    const header = await readSafetensorsHeader(path);
    expect([...header.tensors.keys()]).toEqual(['a', 'b', 'c']);
    expect(header.metadata).toEqual({ format: 'pt' });
    expect((await readFile(path)).readBigUInt64LE(0) % 8n).toBe(0n);
    const weights = await openModelWeights(dir);
    expect([...(await weights.read('c', [2, 12]))]).toEqual([...values].map((v) => bf16ToF32(f32ToBf16(v))));
    expect(weights.bytesRead()).toBe(48);
    expect([...(await weights.read('b'))]).toEqual([...values].map((v) => f16ToF32(f32ToF16(v))));
    expect(await weights.read('a')).toEqual(values);
    expect(weights.bytesRead()).toBe(48 + 48 + 96);
    await expect(weights.read('a', [6, 4])).rejects.toMatchObject({ code: 'InvalidTensor', message: expect.stringContaining('has shape [4,6], the config implies [6,4]') });
    await expect(weights.read('z')).rejects.toMatchObject({ code: 'InvalidTensor', message: expect.stringContaining('no tensor "z"') });
  });

  it('reads a sharded model the same as the single file of the same seed', async () => {
    const one = await makeModel(await tmp(), { layers: 3, seed: 9, dtype: 'bf16' });
    const three = await makeModel(await tmp(), { layers: 3, seed: 9, dtype: 'bf16', shards: 3 });
    expect(three.files).toContain('model.safetensors.index.json');
    const a = await openModelWeights(one.dir);
    const b = await openModelWeights(three.dir);
    expect([...b.names()].sort()).toEqual([...a.names()].sort());
    for (const name of a.names()) expect(await b.read(name)).toEqual(await a.read(name));
  });

  it('refuses a truncated file naming it', async () => {
    const dir = await tmp();
    const path = join(dir, 'model.safetensors');
    await writeSafetensors(path, [{ name: 'a', dtype: 'F32', shape: [4], values: new Float32Array(4) }]);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path, (await readFile(path)).subarray(0, -4));
    await expect(readSafetensorsHeader(path)).rejects.toMatchObject({ code: 'InvalidFile', message: expect.stringContaining(`${path}: tensor "a"`) });
  });
});
