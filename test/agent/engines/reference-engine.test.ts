import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ReferenceEngine } from '../../../src/agent/engines/reference/reference-engine.js';
import { KV_BLOCK_TOKENS } from '../../../src/agent/engines/reference/session-cache.js';
import type { StageSpan } from '../../../src/agent/stage-engine.js';
import { heldWeightBytes, kvBytesPerToken, layerBytes, readLlamaConfig } from '../../../src/model/config.js';
import { makeModel } from '../../../src/model/make-model.js';
import { argmax } from '../../../src/model/sampler.js';
import { f32Tensor, tokenTensor, type Tensor } from '../../../src/wire/tensor.js';
import { generateGreedy, logitsOf, splitModel } from './pipeline.js';

const LAYERS = 4;
const OPTIONS = { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, seed: 3 };
const PROMPT = [...new TextEncoder().encode('batch invariance')].map((b) => b + 3);
const signal = new AbortController().signal;
const span = (layerStart: number, layerEnd: number): StageSpan => ({ modelId: 'm', layerStart, layerEnd, layers: LAYERS });
const tmp = () => mkdtemp(join(tmpdir(), 'hecate-ref-'));
const same = (a: Tensor, b: Tensor) => a.dtype === b.dtype && JSON.stringify(a.shape) === JSON.stringify(b.shape) && Buffer.from(a.data).equals(Buffer.from(b.data));
const rows = (t: Tensor, from: number, to: number, hidden: number) => Buffer.from(t.data.subarray(from * hidden * 4, to * hidden * 4));
let dir = '';

async function engineOn(s: StageSpan, kvMemoryBytes?: number): Promise<ReferenceEngine> {
  const engine = new ReferenceEngine({ models: new Map([['m', dir]]), ...(kvMemoryBytes === undefined ? {} : { kvMemoryBytes }) });
  await engine.load(s);
  return engine;
}

beforeAll(async () => {
  dir = (await makeModel(await tmp(), OPTIONS)).dir;
});

describe('ReferenceEngine: batch invariance', () => {
  it('gives bit-identical rows for a prefill, one token at a time, and a rebuild (first stage)', async () => {
    const prefill = await engineOn(span(0, 2));
    const whole = await prefill.step({ sessionId: 's', span: span(0, 2), step: 0, input: tokenTensor(PROMPT), signal });
    expect(whole.shape).toEqual([PROMPT.length, 64]);
    const single = await engineOn(span(0, 2));
    const pieces: Tensor[] = [];
    for (let i = 0; i < PROMPT.length; i++) pieces.push(await single.step({ sessionId: 's', span: span(0, 2), step: i, input: tokenTensor([PROMPT[i] as number]), signal }));
    for (let i = 0; i < PROMPT.length; i++) expect(rows(whole, i, i + 1, 64).equals(Buffer.from(pieces[i]!.data))).toBe(true);
    // Uneven chunks, then a rebuild from them: the same bits again.
    const chunks = [PROMPT.slice(0, 5), PROMPT.slice(5, 6), PROMPT.slice(6)].map(tokenTensor);
    const rebuilt = await single.rebuild('s', span(0, 2), chunks, signal);
    expect(rows(whole, 0, 5, 64).equals(Buffer.from(rebuilt[0]!.data))).toBe(true);
    expect(rows(whole, 6, PROMPT.length, 64).equals(Buffer.from(rebuilt[2]!.data))).toBe(true);
    expect(single.holds().cachedTokens).toBe(PROMPT.length);
  });

  it('gives bit-identical last logits for a prefill and one token at a time (last stage, middle input)', async () => {
    const first = await engineOn(span(0, 2));
    const hidden = await first.step({ sessionId: 's', span: span(0, 2), step: 0, input: tokenTensor(PROMPT), signal });
    const a = await engineOn(span(2, 4));
    const prefill = await a.step({ sessionId: 's', span: span(2, 4), step: 0, input: hidden, signal });
    const b = await engineOn(span(2, 4));
    let last: Tensor | undefined;
    for (let i = 0; i < PROMPT.length; i++) {
      const row = new Float32Array(hidden.data.slice(i * 256, (i + 1) * 256).buffer);
      last = await b.step({ sessionId: 's', span: span(2, 4), step: i, input: f32Tensor(row, [1, 64]), signal });
    }
    expect(prefill.shape).toEqual([1, 259]);
    expect(same(prefill, last as Tensor)).toBe(true);
  });
});

describe('ReferenceEngine: steps, refusals and retries', () => {
  it('runs a retried step again from where it began, without appending twice', async () => {
    const engine = await engineOn(span(0, LAYERS));
    await engine.step({ sessionId: 's', span: span(0, LAYERS), step: 0, input: tokenTensor(PROMPT), signal });
    const once = await engine.step({ sessionId: 's', span: span(0, LAYERS), step: 1, input: tokenTensor([40]), signal });
    const again = await engine.step({ sessionId: 's', span: span(0, LAYERS), step: 1, input: tokenTensor([40]), signal });
    expect(same(once, again)).toBe(true);
    expect(engine.holds().cachedTokens).toBe(PROMPT.length + 1);
  });

  it('refuses bad input, a step past the next and an unloaded span, changing nothing', async () => {
    const engine = await engineOn(span(0, 2));
    await engine.step({ sessionId: 's', span: span(0, 2), step: 0, input: tokenTensor([5, 6]), signal });
    const before = engine.holds();
    await expect(engine.step({ sessionId: 's', span: span(0, 2), step: 1, input: tokenTensor([259]), signal })).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringContaining('token id 259 at 0 is outside the vocabulary [0, 259)') });
    await expect(engine.step({ sessionId: 's', span: span(0, 2), step: 1, input: f32Tensor(new Float32Array(64), [1, 64]), signal })).rejects.toMatchObject({ code: 'InvalidInput' });
    await expect(engine.step({ sessionId: 's', span: span(0, 2), step: 3, input: tokenTensor([5]), signal })).rejects.toMatchObject({ code: 'SessionNotHeld', message: expect.stringContaining('holds 1 steps') });
    await expect(engine.step({ sessionId: 'other', span: span(0, 2), step: 2, input: tokenTensor([5]), signal })).rejects.toMatchObject({ code: 'SessionNotHeld' });
    await expect(engine.step({ sessionId: 's', span: span(2, 4), step: 0, input: tokenTensor([5]), signal })).rejects.toMatchObject({ code: 'SpanNotLoaded' });
    const aborted = new AbortController();
    aborted.abort();
    await expect(engine.step({ sessionId: 's', span: span(0, 2), step: 1, input: tokenTensor([5]), signal: aborted.signal })).rejects.toMatchObject({ code: 'Aborted' });
    expect(engine.holds()).toEqual(before);
  });

  it('refuses at load a span that does not fit the model, an unknown model, and a config it cannot run', async () => {
    const engine = new ReferenceEngine({ models: new Map([['m', dir]]) });
    await expect(engine.load({ modelId: 'm', layerStart: 2, layerEnd: 6, layers: 6 })).rejects.toMatchObject({ code: 'InvalidSpan', message: expect.stringContaining('(4 layers in') });
    await expect(engine.load({ ...span(0, 1), modelId: 'x' })).rejects.toMatchObject({ code: 'UnknownModel' });
    const scaled = (await makeModel(await tmp(), { ...OPTIONS, layers: 1 })).dir;
    const config = JSON.parse(await readFile(join(scaled, 'config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(scaled, 'config.json'), JSON.stringify({ ...config, rope_scaling: { rope_type: 'yarn', factor: 4 } }));
    const other = new ReferenceEngine({ models: new Map([['m', scaled]]) });
    await expect(other.load({ modelId: 'm', layerStart: 0, layerEnd: 1, layers: 1 })).rejects.toMatchObject({ code: 'UnsupportedConfig', message: expect.stringContaining('"rope_scaling"') });
    expect(other.holds().spans).toEqual([]);
  });
});

describe('ReferenceEngine: memory', () => {
  it('holds only its own layers: memory grows by one f32 layer per layer of the span', async () => {
    const config = await readLlamaConfig(dir);
    const middle = [];
    for (const end of [2, 3]) middle.push((await engineOn(span(1, end))).holds().memoryBytes);
    expect(middle).toEqual([1, 2].map((n) => n * layerBytes(config, 4)));
    const first = (await engineOn(span(0, 1))).holds().memoryBytes;
    expect(first).toBe(layerBytes(config, 4) + 259 * 64 * 4); // the embeddings, no head
    const last = (await engineOn(span(3, 4))).holds().memoryBytes;
    expect(last).toBe(layerBytes(config, 4) + 64 * 4 + 259 * 64 * 4); // the final norm and the head
  });

  it('bounds its KV bytes, evicting the least recently used idle session, which resumes by rebuild', async () => {
    const config = await readLlamaConfig(dir);
    const block = KV_BLOCK_TOKENS * kvBytesPerToken(config, 4) * LAYERS;
    const engine = await engineOn(span(0, LAYERS), 2 * block);
    const weights = engine.holds().memoryBytes;
    const reference = await engineOn(span(0, LAYERS));
    for (const s of ['a', 'b']) await engine.step({ sessionId: s, span: span(0, LAYERS), step: 0, input: tokenTensor(PROMPT), signal });
    await engine.step({ sessionId: 'a', span: span(0, LAYERS), step: 1, input: tokenTensor([9]), signal }); // b is now the least recently used
    await engine.step({ sessionId: 'c', span: span(0, LAYERS), step: 0, input: tokenTensor(PROMPT), signal });
    expect(engine.holds()).toMatchObject({ sessions: 2, memoryBytes: weights + 2 * block });
    await expect(engine.step({ sessionId: 'b', span: span(0, LAYERS), step: 1, input: tokenTensor([9]), signal })).rejects.toMatchObject({ code: 'SessionNotHeld' });
    const [, resumed] = await engine.rebuild('b', span(0, LAYERS), [tokenTensor(PROMPT), tokenTensor([9])], signal);
    await reference.step({ sessionId: 'b', span: span(0, LAYERS), step: 0, input: tokenTensor(PROMPT), signal });
    expect(same(resumed as Tensor, await reference.step({ sessionId: 'b', span: span(0, LAYERS), step: 1, input: tokenTensor([9]), signal }))).toBe(true);
    await expect(engine.step({ sessionId: 'big', span: span(0, LAYERS), step: 0, input: tokenTensor(new Array(3 * KV_BLOCK_TOKENS).fill(7)), signal })).rejects.toMatchObject({ code: 'KvMemoryExhausted' });
    expect(engine.drop('b')).toBe(true);
    expect(engine.drop('b')).toBe(false);
  });

  it('bounds its KV bytes by the memory the plan gave it: its memory less its layers\' planned weights, a shared layer counted once', async () => {
    const config = await readLlamaConfig(dir);
    const block = KV_BLOCK_TOKENS * kvBytesPerToken(config, 4);
    const middle = heldWeightBytes(config, 2, false, false);
    const engine = new ReferenceEngine({ models: new Map([['m', dir]]), memoryBytes: middle + 2 * block * 2 });
    expect(engine.kvBoundBytes()).toBe(middle + 4 * block); // nothing loaded yet
    await engine.load(span(1, 3));
    expect(engine.plannedWeightBytes()).toBe(middle);
    expect(engine.kvBoundBytes()).toBe(4 * block); // two sessions of one block on two layers
    for (const s of ['a', 'b']) await engine.step({ sessionId: s, span: span(1, 3), step: 0, input: f32Tensor(new Float32Array(64), [1, 64]), signal });
    await engine.step({ sessionId: 'c', span: span(1, 3), step: 0, input: f32Tensor(new Float32Array(64), [1, 64]), signal });
    expect(engine.holds().sessions).toBe(2); // a, the least recently used, was evicted
    // A span overlapping the one it holds (a failover's): its layers are counted once, the last stage's head and norm added.
    await engine.load(span(2, 4));
    expect(engine.plannedWeightBytes()).toBe(heldWeightBytes(config, 3, false, true));
    expect(engine.kvBoundBytes()).toBe(middle + 4 * block - heldWeightBytes(config, 3, false, true));
    // Memory the weights alone fill: a step is refused, naming where the bound came from; kvMemoryBytes overrides.
    await expect(engine.step({ sessionId: 'd', span: span(2, 4), step: 0, input: f32Tensor(new Float32Array(64), [1, 64]), signal })).rejects.toMatchObject({ code: 'KvMemoryExhausted', message: expect.stringContaining('the plan gave it') });
    const fixed = new ReferenceEngine({ models: new Map([['m', dir]]), memoryBytes: 1, kvMemoryBytes: 2 * block * 2 });
    await fixed.load(span(1, 3));
    expect(fixed.kvBoundBytes()).toBe(4 * block);
    expect(() => new ReferenceEngine({ models: new Map([['m', dir]]), memoryBytes: 0 })).toThrow(/memoryBytes must be a positive number/);
  });

  it('lets go of a span no longer stepped (a rebalance moved it away) when its weights leave the KV bound no room, and of none when that would not do', async () => {
    const config = await readLlamaConfig(dir);
    const block = KV_BLOCK_TOKENS * kvBytesPerToken(config, 4);
    const hidden = (n: number): Tensor => f32Tensor(new Float32Array(64 * n), [n, 64]);
    // Memory for one middle layer and two blocks of KV on it: holding both spans leaves none.
    const engine = new ReferenceEngine({ models: new Map([['m', dir]]), memoryBytes: heldWeightBytes(config, 1, false, false) + 2 * block });
    await engine.load(span(1, 2));
    await engine.step({ sessionId: 'a', span: span(1, 2), step: 0, input: hidden(1), signal });
    await engine.load(span(2, 3)); // the move's new span, loaded while the old one still serves
    expect(engine.kvBoundBytes()).toBeLessThan(0);
    // Too big for the bound even alone: refused, and the old span and its session stay.
    await expect(engine.step({ sessionId: 'big', span: span(2, 3), step: 0, input: hidden(3 * KV_BLOCK_TOKENS), signal })).rejects.toMatchObject({ code: 'KvMemoryExhausted' });
    expect(engine.holds()).toMatchObject({ sessions: 1, spans: [span(1, 2), span(2, 3)] });
    // A step that fits once the idle old span goes: it goes, its session's cache with it.
    await engine.step({ sessionId: 'b', span: span(2, 3), step: 0, input: hidden(1), signal });
    expect(engine.holds()).toMatchObject({ sessions: 1, spans: [span(2, 3)], kvBytes: block });
    expect(engine.kvBoundBytes()).toBe(2 * block);
    await expect(engine.step({ sessionId: 'a', span: span(1, 2), step: 1, input: hidden(1), signal })).rejects.toMatchObject({ code: 'SpanNotLoaded' });
  });
});

describe('ReferenceEngine: dtypes and tied embeddings', () => {
  for (const dtype of ['f16', 'bf16'] as const) {
    it(`runs a ${dtype} model split in two as it runs whole, and close to the f32 model of the same seed`, async () => {
      const d = (await makeModel(await tmp(), { ...OPTIONS, dtype, tie: true })).dir;
      const whole = await generateGreedy(await splitModel('m', d, LAYERS, []), 's', PROMPT, 8);
      const split = await generateGreedy(await splitModel('m', d, LAYERS, [1]), 's', PROMPT, 8);
      expect(split.ids).toEqual(whole.ids);
      expect(Buffer.from(split.lastLogits.buffer).equals(Buffer.from(whole.lastLogits.buffer))).toBe(true);
      const f32 = (await makeModel(await tmp(), { ...OPTIONS, tie: true })).dir;
      const first = logitsOf(await (await splitModel('m', f32, LAYERS, []))[0]!.engine.step({ sessionId: 's', span: span(0, LAYERS), step: 0, input: tokenTensor(PROMPT), signal }));
      const narrow = logitsOf(await (await splitModel('m', d, LAYERS, []))[0]!.engine.step({ sessionId: 's', span: span(0, LAYERS), step: 0, input: tokenTensor(PROMPT), signal }));
      expect(argmax(narrow)).toBe(argmax(first));
      const worst = Math.max(...first.map((v, i) => Math.abs(v - (narrow[i] as number))));
      expect(worst).toBeLessThan(dtype === 'f16' ? 0.05 : 0.5);
    });
  }
});
