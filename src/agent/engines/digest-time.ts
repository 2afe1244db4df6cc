/**
 * The digest engine's time: a stage call of the stand-in takes `layers × tokens × perLayerMs ÷
 * score` of real time, times a seeded jitter, so load and latency behave as a real engine's would.
 */
import { hashText } from '../../wire/digest.js';

/** What one stage call costs in time, before jitter. */
export interface StageTimeInput {
  readonly layers: number;
  readonly tokens: number;
  readonly perLayerMs: number;
  readonly score: number;
}

/**
 * The time a stage call takes: `layers × tokens × perLayerMs ÷ score`, times a jitter factor in
 * `[1 − jitter, 1 + jitter]` drawn from `seed` and the call's identity (same call, same time).
 */
export function stageDelayMs(work: StageTimeInput, jitter: number, seed: number, callKey: string): number {
  const base = (work.layers * work.tokens * work.perLayerMs) / Math.max(work.score, 0.01);
  const u = hashText(callKey, seed) / 0x1_0000_0000; // [0, 1)
  return Math.max(0, base * (1 + jitter * (2 * u - 1)));
}
