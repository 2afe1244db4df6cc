/**
 * An independent check of the reference engine's arithmetic: the same weights, written as GGUF
 * (test/support/gguf-writer.ts), run by llama.cpp through node-llama-cpp (pinned, provisioned
 * outside the repository by scripts/provision.mjs) on one CPU thread with an f32 KV cache and
 * token ids fed directly. Teacher-forced over 64 steps on several prompts, the next-token
 * probabilities agree within 1e-3 and the greedy choice agrees wherever the top two are more than
 * 1e-4 apart.
 */
import { mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { provision, REQUIREMENTS } from '../../../scripts/provision.mjs';
import { makeModel, type MakeModelOptions } from '../../../src/model/make-model.js';
import { argmax } from '../../../src/model/sampler.js';
import { writeGguf } from '../../support/gguf-writer.js';
import { logitsOf, splitModel, stepThrough } from './pipeline.js';

/** The part of node-llama-cpp's API this test uses (its types are not installed in the repository). */
export interface LlamaCpp {
  getLlama(options: { gpu: false; build: 'never'; logLevel: 'error'; maxThreads: number }): Promise<{
    loadModel(options: { modelPath: string; gpuLayers: 0; useMmap: boolean }): Promise<{
      createContext(options: Record<string, unknown>): Promise<{
        getSequence(): { controlledEvaluate(input: [number, { generateNext: { probabilities: true } }][]): Promise<({ next: { probabilities?: Map<number, number> } } | undefined)[]> };
        dispose(): Promise<void>;
      }>;
      dispose(): Promise<void>;
    }>;
  }>;
}

const STEPS = 64;
const PROMPTS = ['The swarm splits a model.', 'Once upon a time, ', '{"tokens": [1, 2, 3]}'];
/** Teacher-forced continuation: the same 64 bytes after every prompt. */
const FORCED = [...new TextEncoder().encode('abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789.')].slice(0, STEPS).map((b) => b + 3);
const ids = (text: string) => [...new TextEncoder().encode(text)].map((b) => b + 3);
let llamaCpp: LlamaCpp;

beforeAll(async () => {
  const requirement = REQUIREMENTS.find((r) => r.name === 'node-llama-cpp');
  if (requirement === undefined) throw new Error('scripts/provision.mjs has no node-llama-cpp requirement');
  const bin = provision([requirement], { log: (line) => console.error(line) })['NODE_LLAMA_CPP'] as string;
  const pkg = dirname(dirname(dirname(await realpath(bin)))); // node_modules/node-llama-cpp/dist/cli/cli.js → the package
  llamaCpp = (await import(pathToFileURL(join(pkg, 'dist', 'index.js')).href)) as LlamaCpp;
}, 900_000);

/** Softmax in f64. */
function softmax(logits: Float32Array): Float64Array {
  const max = logits[argmax(logits)] as number;
  const out = new Float64Array(logits.length);
  let total = 0;
  for (let i = 0; i < logits.length; i++) total += out[i] = Math.exp((logits[i] as number) - max);
  for (let i = 0; i < logits.length; i++) out[i] = (out[i] as number) / total;
  return out;
}

/** Our distributions, teacher-forced: the prompt as one step, then each forced token as its own. */
async function ours(dir: string, layers: number, prompt: number[]): Promise<Float64Array[]> {
  const stages = await splitModel('m', dir, layers, []);
  const out = [softmax(logitsOf(await stepThrough(stages, 's', 0, prompt)))];
  for (let i = 0; i < STEPS; i++) out.push(softmax(logitsOf(await stepThrough(stages, 's', i + 1, [FORCED[i] as number]))));
  return out;
}

/** llama.cpp's distributions at the same positions (the last prompt token, then each forced token). */
async function theirs(gguf: string, prompt: number[], vocab: number): Promise<Float64Array[]> {
  const llama = await llamaCpp.getLlama({ gpu: false, build: 'never', logLevel: 'error', maxThreads: 1 });
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0, useMmap: false });
  const context = await model.createContext({ contextSize: 256, batchSize: 256, threads: 1, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
  const tokens = [...prompt, ...FORCED];
  const results = await context.getSequence().controlledEvaluate(tokens.map((t) => [t, { generateNext: { probabilities: true } }]));
  await context.dispose();
  await model.dispose();
  return results.slice(prompt.length - 1, prompt.length + STEPS).map((r, i) => {
    const map = r?.next.probabilities;
    if (map === undefined) throw new Error(`llama.cpp gave no probabilities at position ${prompt.length - 1 + i}`);
    const p = new Float64Array(vocab);
    for (const [token, value] of map) p[token] = value;
    return p;
  });
}

const MODELS: [string, MakeModelOptions][] = [
  ['grouped-query, untied', { layers: 4, hidden: 128, heads: 8, kvHeads: 2, intermediate: 256, seed: 21 }],
  ['multi-head, tied, rope_theta 500000', { layers: 3, hidden: 96, heads: 3, kvHeads: 3, intermediate: 160, seed: 22, tie: true, ropeTheta: 500_000 }],
];

describe('the reference engine against llama.cpp (node-llama-cpp 3.21.1, one CPU thread, f32)', () => {
  for (const [name, options] of MODELS) {
    it(`agrees on every next-token probability within 1e-3 and on the greedy choice (${name})`, async () => {
      const dir = (await makeModel(await mkdtemp(join(tmpdir(), 'hecate-llama-')), options)).dir;
      const gguf = join(dir, 'model.gguf');
      const config = await writeGguf(dir, gguf);
      let worst = 0;
      let compared = 0;
      let decided = 0;
      const disagreements: string[] = [];
      for (const prompt of PROMPTS) {
        const a = await ours(dir, config.num_hidden_layers, ids(prompt));
        const b = await theirs(gguf, ids(prompt), config.vocab_size);
        expect(b).toHaveLength(STEPS + 1);
        for (let s = 0; s <= STEPS; s++) {
          const p = a[s] as Float64Array;
          const q = b[s] as Float64Array;
          for (let t = 0; t < p.length; t++) worst = Math.max(worst, Math.abs((p[t] as number) - (q[t] as number)));
          const sorted = [...p].sort((x, y) => y - x);
          compared++;
          if ((sorted[0] as number) - (sorted[1] as number) > 1e-4) {
            decided++;
            if (argmax(p) !== argmax(q)) disagreements.push(`${JSON.stringify(prompt)} step ${s}: ours ${argmax(p)}, llama.cpp ${argmax(q)}`);
          }
        }
      }
      console.log(`${name}: ${compared} distributions, largest probability difference ${worst.toExponential(2)}, greedy decided at ${decided}`);
      expect(worst).toBeLessThan(1e-3);
      expect(disagreements).toEqual([]);
      expect(decided / compared).toBeGreaterThan(0.95); // peaked: near-ties are rare
    });
  }
});
