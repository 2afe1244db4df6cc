/**
 * The model split over 2, 3 and 4 reference engines gives the same greedy ids and bit-identical
 * last logits as one engine holding every layer, also after a stage's session is dropped and
 * rebuilt from its replayed boundary activations.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeModel } from '../../../src/model/make-model.js';
import { generateGreedy, splitModel, type Stage } from './pipeline.js';

const LAYERS = 6;
const PROMPT = [...new TextEncoder().encode('The swarm splits a model.')].map((b) => b + 3);
const TOKENS = 24;
let dir = '';
let whole: { ids: number[]; lastLogits: Float32Array };

beforeAll(async () => {
  dir = (await makeModel(await mkdtemp(join(tmpdir(), 'hecate-split-')), { layers: LAYERS, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, seed: 11 })).dir;
  whole = await generateGreedy(await splitModel('m', dir, LAYERS, []), 's', PROMPT, TOKENS);
});

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

describe('a model split over reference engines', () => {
  it('generates more than one distinct token (the comparison is not vacuous)', () => {
    expect(new Set(whole.ids).size).toBeGreaterThan(3);
  });

  for (const cuts of [[3], [2, 4], [1, 3, 5]]) {
    it(`gives the same ids and bit-identical last logits over ${cuts.length + 1} engines (cuts ${cuts.join(', ')})`, async () => {
      const split = await generateGreedy(await splitModel('m', dir, LAYERS, cuts), 's', PROMPT, TOKENS);
      expect(split.ids).toEqual(whole.ids);
      expect(bytes(split.lastLogits).equals(bytes(whole.lastLogits))).toBe(true);
    });
  }

  for (const victim of [0, 1, 2]) {
    it(`gives the same after stage ${victim} of 3 loses the session mid-generation and rebuilds it by replay`, async () => {
      const stages: Stage[] = await splitModel('m', dir, LAYERS, [2, 4]);
      const stage = stages[victim] as Stage;
      const run = await generateGreedy(stages, 's', PROMPT, TOKENS, async (step) => {
        if (step !== 10) return;
        expect(stage.engine.drop('s')).toBe(true);
        expect(stage.engine.holds().sessions).toBe(0);
        const inputs = stage.inputs.get('s') ?? [];
        const outputs = await stage.engine.rebuild('s', stage.span, inputs, new AbortController().signal);
        expect(outputs).toHaveLength(10);
        expect(stage.engine.holds().cachedTokens).toBe(PROMPT.length + 9);
        // A rebuilt stage's outputs equal what the next stage was given the first time.
        const next = stages[victim + 1];
        if (next !== undefined) for (let s = 0; s < 10; s++) expect(Buffer.from(outputs[s]!.data).equals(Buffer.from(next.inputs.get('s')![s]!.data))).toBe(true);
      });
      expect(run.ids).toEqual(whole.ids);
      expect(bytes(run.lastLogits).equals(bytes(whole.lastLogits))).toBe(true);
    });
  }
});
