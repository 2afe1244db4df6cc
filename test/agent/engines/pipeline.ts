/**
 * Test support: a model split over reference engines in this process, each stage's output passed
 * to the next as the wire's Tensor, and each stage's inputs kept (what replay needs).
 */
import { ReferenceEngine } from '../../../src/agent/engines/reference/reference-engine.js';
import type { StageSpan } from '../../../src/agent/stage-engine.js';
import { argmax } from '../../../src/model/sampler.js';
import { tokenTensor, type Tensor } from '../../../src/wire/tensor.js';

/** One stage: its engine, its span, and every input it was given per session, in step order. */
export interface Stage {
  readonly engine: ReferenceEngine;
  readonly span: StageSpan;
  readonly inputs: Map<string, Tensor[]>;
}

/** Splits a model of `layers` layers at `cuts` (e.g. [2] → [0,2) and [2,layers)), one engine per stage. */
export async function splitModel(modelId: string, dir: string, layers: number, cuts: readonly number[], kvMemoryBytes?: number): Promise<Stage[]> {
  const bounds = [0, ...cuts, layers];
  const stages: Stage[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const engine = new ReferenceEngine({ models: new Map([[modelId, dir]]), ...(kvMemoryBytes === undefined ? {} : { kvMemoryBytes }) });
    const span = { modelId, layerStart: bounds[i] as number, layerEnd: bounds[i + 1] as number, layers };
    await engine.load(span);
    stages.push({ engine, span, inputs: new Map() });
  }
  return stages;
}

/** Runs one step of `sessionId` through every stage; returns the last stage's logits tensor. */
export async function stepThrough(stages: readonly Stage[], sessionId: string, step: number, ids: readonly number[]): Promise<Tensor> {
  let tensor = tokenTensor(ids);
  const signal = new AbortController().signal;
  for (const stage of stages) {
    const history = stage.inputs.get(sessionId) ?? [];
    history[step] = tensor;
    history.length = step + 1;
    stage.inputs.set(sessionId, history);
    tensor = await stage.engine.step({ sessionId, span: stage.span, step, input: tensor, signal });
  }
  return tensor;
}

/** The logits of a `[1, vocab]` f32 tensor. */
export const logitsOf = (tensor: Tensor): Float32Array => new Float32Array(tensor.data.slice().buffer);

/** A greedy generation: the prompt as step 0, then one token per step; the ids and the last logits. */
export async function generateGreedy(stages: readonly Stage[], sessionId: string, prompt: readonly number[], tokens: number, onStep?: (step: number) => Promise<void>): Promise<{ ids: number[]; lastLogits: Float32Array }> {
  const ids: number[] = [];
  let logits = logitsOf(await stepThrough(stages, sessionId, 0, prompt));
  for (let step = 1; step <= tokens; step++) {
    const next = argmax(logits);
    ids.push(next);
    if (step === tokens) break;
    await onStep?.(step);
    logits = logitsOf(await stepThrough(stages, sessionId, step, [next]));
  }
  return { ids, lastLogits: logits };
}
