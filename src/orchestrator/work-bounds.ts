/**
 * What the orchestrator expects a generation to cost, from the work it asks (docs/serve.md,
 * "Limits"): a stage call takes layers × tokens × `perLayerMs` ÷ the node's score (the agents'
 * work model), plus `callMs` on the wire. From it, every stage call gets a budget that grows with
 * its work, and a generation that cannot finish within the deadline is refused before it starts.
 */
import type { SwarmStateLike } from '../core/types.js';
import { ServeError } from '../wire/serve-error.js';
import { MAX_TIMER_MS } from '../wire/stage-bounds.js';

/** The orchestrator's model of its agents' work. */
export interface WorkModel {
  /** Milliseconds one layer takes for one token at score 1 (the agents' `--per-layer-ms`). */
  readonly perLayerMs: number;
  /** A call's budget is its base timeout plus this many times its expected work. */
  readonly slack: number;
  /** The least time one stage call spends besides its work (HTTP on loopback). */
  readonly callMs: number;
}

/** The defaults: the stand-in agent's 2 ms, the stall rule's factor of 4 (docs/detection.md), 1 ms a call. */
export const DEFAULT_WORK: WorkModel = Object.freeze({ perLayerMs: 2, slack: 4, callMs: 1 });

/** A node's score as the swarm knows it (its telemetry, else 1), floored as the agents floor it. */
export function nodeScore(state: SwarmStateLike, nodeId: string): number {
  const score = Object.hasOwn(state.nodes, nodeId) ? state.nodes[nodeId]?.score : undefined;
  return Math.max(score ?? 1, 0.01);
}

/** One stage call's work: its layers, its tokens (its input's and its replay's), its node's score. */
export interface StageWork {
  readonly layers: number;
  readonly tokens: number;
  readonly score: number;
}

/** The work of one stage call in ms: layers × tokens × perLayerMs ÷ score. */
export function stageWorkMs(work: WorkModel, call: StageWork): number {
  return (call.layers * call.tokens * work.perLayerMs) / Math.max(call.score, 0.01);
}

/**
 * How long a stage call may take before it fails: the base timeout plus `slack` times its work,
 * so a call that is slow only because it is large is never timed out (nor charged to its node).
 * Below the host timer's limit.
 */
export function stageBudgetMs(baseMs: number, work: WorkModel, call: StageWork): number {
  return Math.min(baseMs + work.slack * stageWorkMs(work, call), MAX_TIMER_MS - 1);
}

/** The least time a generation takes on the fastest intact copy of its model, and what it would take per step. */
export interface GenerationBound {
  /** Milliseconds of the whole generation: its prompt's step, then one token a step. */
  readonly ms: number;
  /** The prompt's step alone. */
  readonly promptMs: number;
  /** Each later step. */
  readonly stepMs: number;
  /** One token through every layer of the copy, without the calls' own time. */
  readonly perTokenMs: number;
  /** The calls' own time of one step. */
  readonly callsMs: number;
}

/** What a generation asks: `steps` steps of a `promptTokens` prompt on model `modelId`. */
export interface GenerationWork {
  readonly modelId: string;
  readonly promptTokens: number;
  readonly steps: number;
}

/**
 * The least time `ask` takes: on the copy whose nodes are fastest (alive or not: a lower bound),
 * each stage's work plus `callMs`. Undefined when the plan has no copy of the model (routing says why).
 */
export function generationBound(state: SwarmStateLike, work: WorkModel, ask: GenerationWork): GenerationBound | undefined {
  const { modelId, promptTokens, steps } = ask;
  let best: GenerationBound | undefined;
  for (const p of state.plan.pipelines) {
    if (p.modelId !== modelId) continue;
    let perToken = 0;
    for (const s of p.stages) perToken += stageWorkMs(work, { layers: s.layerEnd - s.layerStart, tokens: 1, score: nodeScore(state, s.nodeId) });
    const calls = p.stages.length * work.callMs;
    const promptMs = perToken * promptTokens + calls;
    const stepMs = perToken + calls;
    const ms = promptMs + stepMs * (steps - 1);
    if (best === undefined || ms < best.ms) best = { ms, promptMs, stepMs, perTokenMs: perToken, callsMs: calls };
  }
  return best;
}

/**
 * Refuses, before anything runs, a generation that cannot finish within `deadlineMs` (422 naming
 * `prompt` when its first step alone cannot, else `steps`, with the bound computed and what fits).
 * Returns the bound it checked (undefined when the plan has no copy of the model).
 */
export function checkFitsDeadline(state: SwarmStateLike, work: WorkModel, ask: GenerationWork, deadlineMs: number): GenerationBound | undefined {
  const { modelId, promptTokens, steps } = ask;
  const bound = generationBound(state, work, ask);
  if (bound === undefined || bound.ms <= deadlineMs) return bound;
  if (bound.promptMs > deadlineMs) {
    const fit = Math.max(0, Math.floor((deadlineMs - bound.callsMs) / bound.perTokenMs));
    throw new ServeError('InvalidRequest', 422, `prompt: ${promptTokens} tokens need at least ${Math.ceil(bound.promptMs)} ms on the fastest copy of "${modelId}", over the deadline of ${deadlineMs} ms; at most ${fit} tokens (${fit * 4} characters) fit`, { field: 'prompt' });
  }
  const fit = 1 + Math.floor((deadlineMs - bound.promptMs) / bound.stepMs);
  throw new ServeError('InvalidRequest', 422, `steps: ${steps} steps need at least ${Math.ceil(bound.ms)} ms on the fastest copy of "${modelId}" (${bound.stepMs.toFixed(1)} ms a step), over the deadline of ${deadlineMs} ms; at most ${fit} fit`, { field: 'steps' });
}
