/** The failure-detector settings of `hecate-node serve`, and the bounds any settings give. */
import { recordInterval } from '../core/heartbeat-history.js';
import { firstHistory, phiCrossingMs, resolvePhiOptions, type PhiOptions } from '../core/phi.js';

/**
 * The detector settings `serve` uses unless told otherwise (docs/serve.md): a node is suspect
 * after about 1.7 s of silence and down after about 3.9 s, with 1 s heartbeats — so an agent
 * paused for 2 s is suspected, with room to spare, and comes back without a down.
 */
export const SERVE_DETECTOR: PhiOptions = Object.freeze({ threshold: 8, suspectThreshold: 0.7, expectedIntervalMs: 1000, acceptablePauseMs: 250, minStdDevMs: 500 });

/** When a node with steady heartbeats at `intervalMs` becomes suspect and down after its last one. */
export function detectorBounds(options: PhiOptions, intervalMs = 1000): { suspectAfterMs: number; downAfterMs: number } {
  const o = resolvePhiOptions(options);
  let history = firstHistory(o);
  for (let i = 0; i < 200; i++) history = recordInterval(history, intervalMs);
  return { suspectAfterMs: Math.round(phiCrossingMs(o.suspectThreshold, history, o)), downAfterMs: Math.round(phiCrossingMs(o.threshold, history, o)) };
}
