/** Every policy of the comparison, in report order. */
import { leastOutstanding, powerOfTwo, randomPolicy, weightedRoundRobin } from './baselines.js';
import { oracleSed } from './oracle.js';
import { p2cPeakEwma } from './peak-ewma.js';
import type { Policy } from './router.js';
import { oursDetect, oursLatencyWeights, oursReserve, seedArgmin } from './swarm-policy.js';

/** The baselines, the original design, ours, the measured-latency-weights experiment, ours finding failures itself, and the oracle reference. */
export const POLICIES: readonly Policy[] = [weightedRoundRobin, randomPolicy, leastOutstanding, powerOfTwo, p2cPeakEwma(), seedArgmin, oursReserve(), oursLatencyWeights(), oursDetect(), oracleSed];
