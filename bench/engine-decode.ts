/**
 * `npm run bench:engine`: decode tokens/s of one reference engine holding a whole generated
 * ~100 M-parameter f32 model on one thread, against llama.cpp (node-llama-cpp 3.21.1, one thread,
 * the same weights as f32 GGUF) in the same run, medians, and both against the memory-bandwidth
 * bound (bytes of weights read per token ÷ a streaming read of 512 MB, 16× this machine's 32 MB
 * last-level cache). Prefill tokens/s are reported the same way (no target). Writes
 * `bench/engine-decode.json`. Target: decode ≥ 0.5× llama.cpp (docs/engine-reference.md).
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ReferenceEngine } from '../src/agent/engines/reference/reference-engine.js';
import type { StageSpan } from '../src/agent/stage-engine.js';
import { modelParameters } from '../src/model/config.js';
import { makeModel } from '../src/model/make-model.js';
import { argmax } from '../src/model/sampler.js';
import { tokenTensor, type Tensor } from '../src/wire/tensor.js';
import { writeGguf } from '../test/support/gguf-writer.js';
import type { BenchRow } from './types.js';
import { ENGINE_MODEL as MODEL, QUICK, median } from './engine-model.js';

const PROMPT = 32;
const DECODE = QUICK ? 16 : 48;
const PREFILL_RUNS = 3;
const log = (line: string) => console.error(line);

/** The part of node-llama-cpp's API the bench uses. */
interface LlamaCpp {
  getLlama(options: { gpu: false; build: 'never'; logLevel: 'error'; maxThreads: number }): Promise<{
    loadModel(options: { modelPath: string; gpuLayers: 0; useMmap: boolean }): Promise<{
      createContext(options: Record<string, unknown>): Promise<{
        getSequence(): { controlledEvaluate(input: [number, { generateNext: { token: true; options: { temperature: 0 } } }][]): Promise<({ next: { token?: number | null } } | undefined)[]> };
        dispose(): Promise<void>;
      }>;
      dispose(): Promise<void>;
    }>;
  }>;
}

async function loadLlamaCpp(): Promise<LlamaCpp> {
  const provisionUrl = new URL('../../scripts/provision.mjs', import.meta.url);
  const { provision, REQUIREMENTS } = (await import(provisionUrl.href)) as typeof import('../scripts/provision.mjs');
  const requirement = REQUIREMENTS.find((r) => r.name === 'node-llama-cpp');
  if (requirement === undefined) throw new Error('scripts/provision.mjs has no node-llama-cpp requirement');
  const bin = provision([requirement], { log })['NODE_LLAMA_CPP'] as string;
  return (await import(pathToFileURL(join(dirname(dirname(dirname(realpathSync(bin)))), 'dist', 'index.js')).href)) as LlamaCpp;
}

/** One contender: a prefill of a fresh session (seconds), then decode steps of one session (seconds each). */
interface Contender {
  prefill(prompt: number[], run: number): Promise<number>;
  /** Starts the decode session with the prompt; returns the first greedy token. */
  start(prompt: number[]): Promise<number>;
  /** Decodes `token`; returns the seconds it took and the next greedy token. */
  decode(token: number): Promise<{ seconds: number; next: number }>;
  close(): Promise<void>;
}

/** The reference engine holding every layer. */
async function ours(dir: string, layers: number): Promise<Contender> {
  const engine = new ReferenceEngine({ models: new Map([['m', dir]]) });
  const span: StageSpan = { modelId: 'm', layerStart: 0, layerEnd: layers, layers };
  await engine.load(span);
  const signal = new AbortController().signal;
  const run = (sessionId: string, step: number, ids: number[]): Promise<Tensor> => engine.step({ sessionId, span, step, input: tokenTensor(ids), signal });
  const next = (t: Tensor) => argmax(new Float32Array(t.data.slice().buffer));
  let step = 0;
  return {
    async prefill(prompt, r) {
      const t0 = performance.now();
      await run(`p${r}`, 0, prompt);
      const seconds = (performance.now() - t0) / 1000;
      engine.drop(`p${r}`);
      return seconds;
    },
    async start(prompt) {
      return next(await run('d', step++, prompt));
    },
    async decode(token) {
      const t0 = performance.now();
      const out = await run('d', step++, [token]);
      return { seconds: (performance.now() - t0) / 1000, next: next(out) };
    },
    async close() {
      engine.drop('d');
    },
  };
}

/** llama.cpp, one thread, f32 weights and KV cache. */
async function theirs(api: LlamaCpp, gguf: string): Promise<Contender> {
  const llama = await api.getLlama({ gpu: false, build: 'never', logLevel: 'error', maxThreads: 1 });
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0, useMmap: false });
  const contextOptions = { contextSize: 256, batchSize: 256, threads: 1, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' };
  const greedy = { generateNext: { token: true, options: { temperature: 0 } } } as const;
  const promptInput = (prompt: number[]) => prompt.map((t, i) => (i === prompt.length - 1 ? [t, greedy] : t)) as never;
  const context = await model.createContext(contextOptions);
  const sequence = context.getSequence();
  return {
    async prefill(prompt) {
      const fresh = await model.createContext(contextOptions);
      const t0 = performance.now();
      await fresh.getSequence().controlledEvaluate(promptInput(prompt));
      const seconds = (performance.now() - t0) / 1000;
      await fresh.dispose();
      return seconds;
    },
    async start(prompt) {
      const out = await sequence.controlledEvaluate(promptInput(prompt));
      return out[prompt.length - 1]?.next.token as number;
    },
    async decode(token) {
      const t0 = performance.now();
      const out = await sequence.controlledEvaluate([[token, greedy]]);
      return { seconds: (performance.now() - t0) / 1000, next: out[0]?.next.token as number };
    },
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}

/**
 * Prefill runs and decode steps of both contenders, interleaved (the order alternating), so a
 * burst of load on a shared machine hits both alike: tokens/s medians and the greedy ids.
 */
async function race(a: Contender, b: Contender, prompt: number[]): Promise<{ prefill: [number, number]; decode: [number, number]; ids: [number[], number[]] }> {
  const prefill: [number[], number[]] = [[], []];
  const decode: [number[], number[]] = [[], []];
  const both = [a, b] as const;
  for (let r = 0; r < PREFILL_RUNS; r++) for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) prefill[i as 0 | 1].push(prompt.length / (await both[i as 0 | 1].prefill(prompt, r)));
  const token: [number, number] = [await a.start(prompt), await b.start(prompt)];
  const ids: [number[], number[]] = [[], []];
  for (let step = 0; step < DECODE; step++) {
    for (const i of (step % 2 === 0 ? [0, 1] : [1, 0]) as (0 | 1)[]) {
      ids[i].push(token[i]);
      const { seconds, next } = await both[i].decode(token[i]);
      decode[i].push(seconds);
      token[i] = next;
    }
  }
  return { prefill: [median(prefill[0]), median(prefill[1])], decode: [1 / median(decode[0]), 1 / median(decode[1])], ids };
}

/** Bytes/s of a streaming read of 512 MB (memchr over a buffer holding no match), median of 5. */
function streamingRead(): number {
  const bytes = 512 * 1024 * 1024;
  const buffer = Buffer.alloc(bytes, 1);
  const rates: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    if (buffer.indexOf(2) !== -1) throw new Error('unexpected byte');
    rates.push(bytes / ((performance.now() - t0) / 1000));
  }
  return median(rates);
}

const dir = mkdtempSync(join(tmpdir(), 'hecate-bench-engine-'));
try {
  log(`writing the model (${JSON.stringify(MODEL)})`);
  const made = await makeModel(dir, MODEL);
  const config = made.config;
  const gguf = join(dir, 'model.gguf');
  await writeGguf(dir, gguf);
  const prompt = Array.from({ length: PROMPT }, (_, i) => 3 + ((i * 37) % 256));
  const api = await loadLlamaCpp();
  const cpp = await theirs(api, gguf);
  const ref = await ours(dir, config.num_hidden_layers);
  log('decoding, the reference engine and llama.cpp interleaved');
  const result = await race(ref, cpp, prompt);
  await cpp.close();
  await ref.close();
  log('streaming read');
  const bandwidth = streamingRead();
  const weightBytesPerToken = made.weightBytes - config.vocab_size * config.hidden_size * 4 * (config.tie_word_embeddings ? 0 : 1) + config.hidden_size * 4; // every weight but the embedding table; one embedding row
  const bound = bandwidth / weightBytesPerToken;
  const [ourDecode, cppDecode] = result.decode;
  const [ourPrefill, cppPrefill] = result.prefill;
  const size = `${(modelParameters(config) / 1e6).toFixed(1)} M params f32, 1 thread`;
  const rows: BenchRow[] = [
    { name: 'engine decode', size, median: ourDecode, unit: 'tokens/s', baselineName: 'llama.cpp', baseline: cppDecode, ratio: ourDecode / cppDecode, target: 'ratio >= 0.5', pass: ourDecode / cppDecode >= 0.5 },
    { name: 'engine decode vs bandwidth bound', size, median: ourDecode, unit: 'tokens/s', baselineName: 'bandwidth bound', baseline: bound, ratio: ourDecode / bound, target: 'reported', pass: true },
    { name: 'llama.cpp decode vs bandwidth bound', size, median: cppDecode, unit: 'tokens/s', baselineName: 'bandwidth bound', baseline: bound, ratio: cppDecode / bound, target: 'reported', pass: true },
    { name: 'engine prefill', size: `${size}, ${PROMPT}-token prompt`, median: ourPrefill, unit: 'tokens/s', baselineName: 'llama.cpp', baseline: cppPrefill, ratio: ourPrefill / cppPrefill, target: 'reported', pass: true },
  ];
  const sameIds = result.ids[0].every((id, i) => id === result.ids[1][i]);
  const report = {
    environment: { node: process.version, cpu: `${cpus()[0]?.model ?? 'unknown'} x ${cpus().length}`, loadAverage: loadavg()[0], quick: QUICK },
    model: { ...MODEL, parameters: modelParameters(config), weightBytes: made.weightBytes, weightBytesPerToken },
    streamingReadGBs: bandwidth / 1e9,
    greedyIdsAgree: sameIds,
    rows,
  };
  writeFileSync(new URL('../../bench/engine-decode.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  for (const r of rows) console.log(`${r.name} | ${r.size} | ${r.median.toFixed(2)} ${r.unit} | ${r.baselineName}: ${r.baseline?.toFixed(2)} | ratio ${r.ratio?.toFixed(3)} | ${r.target} | ${r.pass ? 'PASS' : 'FAIL'}`);
  console.log(`streaming read ${(bandwidth / 1e9).toFixed(1)} GB/s; weights read per token ${(weightBytesPerToken / 1e6).toFixed(0)} MB; greedy ids agree with llama.cpp over ${DECODE} steps: ${sameIds}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
