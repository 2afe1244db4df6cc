import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/command.js';
import { main } from '../../src/cli/main.js';
import { readLlamaConfig } from '../../src/model/config.js';

function memoryIO(cwd: string): CliIO & { out: string; err: string } {
  const io = {
    cwd,
    out: '',
    err: '',
    readFile: () => '',
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
  };
  return io;
}

describe('hecate-node make-model', () => {
  it('writes the model the flags describe, relative to the working directory, the same bytes for the same seed', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'hecate-cli-make-'));
    const flags = ['--layers', '2', '--hidden', '32', '--heads', '4', '--kv-heads', '1', '--intermediate', '48', '--vocab', '300', '--seed', '9', '--dtype', 'bf16', '--tie'];
    const io = memoryIO(cwd);
    expect(await main(['make-model', '--out', 'a', ...flags], io)).toBe(0);
    expect(await main(['make-model', '--out', 'b', ...flags], io)).toBe(0);
    expect(io.err).toBe('');
    expect(io.out).toContain(`wrote ${join(cwd, 'a')}: 2 layers, hidden 32, 4 heads (1 kv), intermediate 48, vocab 300`);
    expect(await readLlamaConfig(join(cwd, 'a'))).toMatchObject({ num_hidden_layers: 2, hidden_size: 32, num_key_value_heads: 1, vocab_size: 300, torch_dtype: 'bfloat16', tie_word_embeddings: true });
    const hash = async (dir: string) => createHash('sha256').update(await readFile(join(cwd, dir, 'model.safetensors'))).digest('hex');
    expect(await hash('a')).toBe(await hash('b'));
  });

  it('exits 2 naming the flag for a missing --out, a bad dtype and shapes that do not fit', async () => {
    const io = memoryIO(await mkdtemp(join(tmpdir(), 'hecate-cli-make-')));
    expect(await main(['make-model'], io)).toBe(2);
    expect(io.err).toContain('missing required flag --out');
    expect(await main(['make-model', '--out', 'x', '--dtype', 'f8'], io)).toBe(2);
    expect(io.err).toContain('flag --dtype: expected f32, f16, bf16, got "f8"');
    expect(await main(['make-model', '--out', 'x', '--heads', '4', '--kv-heads', '3'], io)).toBe(2);
    expect(io.err).toContain('hecate-node make-model: --kv-heads (3) must divide --heads (4)');
    expect(await main(['make-model', '--out', 'x', '--layers', '0'], io)).toBe(2);
    expect(io.err).toContain('flag --layers: must be >= 1, got "0"');
  });

  it('is listed in the help', async () => {
    const io = memoryIO(tmpdir());
    expect(await main(['make-model', '--help'], io)).toBe(0);
    expect(io.out).toContain('--kv-heads');
  });
});
