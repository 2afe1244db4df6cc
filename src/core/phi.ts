/**
 * The phi-accrual failure detector (Hayashibara et al.), as Akka computes it: phi is how
 * surprised we should be that no heartbeat came for `elapsed` ms, given the history of
 * inter-arrival times — −log10 of the probability that a heartbeat is still on its way, under a
 * normal distribution whose mean is the history's mean plus an acceptable pause and whose standard
 * deviation is at least a minimum. phi 1 means a 10% chance of a mistake, phi 8 one in 10⁸.
 * Pure: no clock here; the node actor turns {@link phiCrossingMs} into delays on its clock.
 */
import { emptyHistory, historyMean, historyStdDev, recordInterval, type HeartbeatHistory } from './heartbeat-history.js';

/** Settings of the phi-accrual detector; the defaults are Akka Cluster's. */
export interface PhiOptions {
  /** phi at which a silent node is declared down. @defaultValue 8 */
  readonly threshold?: number;
  /** phi at which a silent node becomes suspect (below `threshold`). @defaultValue threshold / 2 */
  readonly suspectThreshold?: number;
  /** The heartbeat interval assumed before any was measured, in ms. @defaultValue 1000 */
  readonly expectedIntervalMs?: number;
  /** A pause that is not yet suspicious, added to the mean interval, in ms. @defaultValue 3000 */
  readonly acceptablePauseMs?: number;
  /** Floor of the standard deviation, so a very regular node is not judged too sharply, in ms. @defaultValue 100 */
  readonly minStdDevMs?: number;
  /** How many inter-arrival times the history keeps. @defaultValue 1000 */
  readonly maxSamples?: number;
}

/** {@link PhiOptions} with every default filled in. */
export interface ResolvedPhiOptions {
  readonly threshold: number;
  readonly suspectThreshold: number;
  readonly expectedIntervalMs: number;
  readonly acceptablePauseMs: number;
  readonly minStdDevMs: number;
  readonly maxSamples: number;
}

/** Akka's defaults. */
export const DEFAULT_PHI: ResolvedPhiOptions = Object.freeze({
  threshold: 8,
  suspectThreshold: 4,
  expectedIntervalMs: 1000,
  acceptablePauseMs: 3000,
  minStdDevMs: 100,
  maxSamples: 1000,
});

/** The first problem with a set of detector options, as a message naming the field; undefined when valid. */
export function phiOptionsIssue(o: PhiOptions | undefined): string | undefined {
  if (o === undefined) return undefined;
  if (o === null || typeof o !== 'object') return 'failureDetector must be an object { threshold?, suspectThreshold?, expectedIntervalMs?, acceptablePauseMs?, minStdDevMs?, maxSamples? }';
  const positive = (name: keyof PhiOptions, v: unknown, zeroOk = false) =>
    v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && (zeroOk ? v >= 0 : v > 0)) ? `failureDetector "${name}" must be a finite number ${zeroOk ? '>= 0' : '> 0'}, got ${String(v)}` : undefined;
  const issue =
    positive('threshold', o.threshold) ??
    positive('suspectThreshold', o.suspectThreshold) ??
    positive('expectedIntervalMs', o.expectedIntervalMs) ??
    positive('acceptablePauseMs', o.acceptablePauseMs, true) ??
    positive('minStdDevMs', o.minStdDevMs);
  if (issue !== undefined) return issue;
  if (o.maxSamples !== undefined && !(Number.isInteger(o.maxSamples) && o.maxSamples >= 1)) return `failureDetector "maxSamples" must be an integer >= 1, got ${String(o.maxSamples)}`;
  const r = resolvePhiOptions(o);
  if (!(r.suspectThreshold <= r.threshold)) return `failureDetector "suspectThreshold" (${r.suspectThreshold}) must not exceed "threshold" (${r.threshold})`;
  return undefined;
}

/** Fills in the defaults (no validation: see {@link phiOptionsIssue}). */
export function resolvePhiOptions(o: PhiOptions = {}): ResolvedPhiOptions {
  const threshold = o.threshold ?? DEFAULT_PHI.threshold;
  return {
    threshold,
    suspectThreshold: o.suspectThreshold ?? threshold / 2,
    expectedIntervalMs: o.expectedIntervalMs ?? DEFAULT_PHI.expectedIntervalMs,
    acceptablePauseMs: o.acceptablePauseMs ?? DEFAULT_PHI.acceptablePauseMs,
    minStdDevMs: o.minStdDevMs ?? DEFAULT_PHI.minStdDevMs,
    maxSamples: o.maxSamples ?? DEFAULT_PHI.maxSamples,
  };
}

/**
 * The history a node starts with at its first heartbeat, as Akka seeds it: two intervals at the
 * expected interval ± a quarter of it, so the first judgements are neither blind nor sharp.
 */
export function firstHistory(o: ResolvedPhiOptions): HeartbeatHistory {
  const mean = o.expectedIntervalMs;
  const std = mean / 4;
  return recordInterval(recordInterval(emptyHistory(o.maxSamples), mean - std), mean + std);
}

/** The normal distribution phi assumes: history mean + acceptable pause, std at least the minimum. */
function distribution(h: HeartbeatHistory, o: ResolvedPhiOptions): { mean: number; std: number } {
  const mean = (h.size === 0 ? o.expectedIntervalMs : historyMean(h)) + o.acceptablePauseMs;
  const std = Math.max(h.size === 0 ? o.expectedIntervalMs / 4 : historyStdDev(h), o.minStdDevMs);
  return { mean, std };
}

// Akka's logistic approximation of the normal CDF: P(X > t) ≈ e / (1 + e), e = exp(−y(A + B·y²)).
const A = 1.5976;
const B = 0.070566;

/**
 * phi after `elapsedMs` without a heartbeat. Increasing in `elapsedMs`; 0.30 at the mean.
 * @example phi(4523, firstHistory(resolvePhiOptions())) // ≈ 8: Akka's default threshold
 */
export function phi(elapsedMs: number, h: HeartbeatHistory, o: ResolvedPhiOptions = DEFAULT_PHI): number {
  const { mean, std } = distribution(h, o);
  const y = (elapsedMs - mean) / std;
  const e = Math.exp(-y * (A + B * y * y));
  // Two forms of −log10(e / (1 + e)), each accurate on its side (Akka's).
  return elapsedMs > mean ? -Math.log10(e / (1 + e)) : -Math.log10(1 - 1 / (1 + e));
}

/**
 * How long after the last heartbeat phi reaches `level`, in ms (never negative): phi is
 * increasing in the silence, so the detector needs no polling — one timer per level.
 * Inverts {@link phi}: e/(1+e) = 10^−level is a depressed cubic in y, solved by Cardano's formula
 * and polished with two Newton steps.
 * @throws {RangeError} for a level that is not a finite number > 0
 */
export function phiCrossingMs(level: number, h: HeartbeatHistory, o: ResolvedPhiOptions = DEFAULT_PHI): number {
  if (!(Number.isFinite(level) && level > 0)) throw new RangeError(`phi level must be a finite number > 0, got ${String(level)}`);
  const { mean, std } = distribution(h, o);
  // ln(e) where e/(1+e) = p = 10^−level: ln(p) − ln(1 − p), stable for small and large levels.
  const L = -level * Math.LN10 - Math.log1p(-Math.pow(10, -level));
  // B·y³ + A·y + L = 0  ⇔  y³ + P·y + Q = 0 with P > 0: one real root.
  const P = A / B;
  const Q = L / B;
  const s = Math.sqrt((Q * Q) / 4 + (P * P * P) / 27);
  let y = Math.cbrt(-Q / 2 + s) + Math.cbrt(-Q / 2 - s);
  for (let i = 0; i < 2; i++) y -= (B * y * y * y + A * y + L) / (3 * B * y * y + A);
  return Math.max(mean + y * std, 0);
}
