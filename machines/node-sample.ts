/** A node's telemetry samples: their checks, the EWMA, and the values a node actor's context gives. */
import { TELEMETRY_LIMITS } from '../src/core/telemetry-limits.js';
import type { NodeContext } from './node.machine.js';

/** One telemetry sample; every field optional, every present field from 0 to its bound (`TELEMETRY_LIMITS`). */
export interface NodeSample {
  readonly load?: number;
  readonly latencyMs?: number;
  readonly score?: number;
}

/**
 * True for a number the EWMA may take: from 0 to its bound in `TELEMETRY_LIMITS` (docs/inputs.md),
 * so never NaN nor infinite; a score must also be > 0.
 */
export function isGoodValue(field: keyof NodeSample, v: unknown): boolean {
  return typeof v === 'number' && v >= 0 && v <= TELEMETRY_LIMITS[field] && (field !== 'score' || v > 0);
}

/**
 * The first bad field of a sample, or undefined when it is good: every key one of `load`,
 * `latencyMs`, `score`, at least one of them given, each from 0 to its bound. `'sample'` means the
 * sample as a whole: not an object, an unknown key (a typo such as `latency` must not count as a
 * sample), or no known key at all; {@link sampleProblem} says which.
 */
export function badSampleField(sample: NodeSample): keyof NodeSample | 'sample' | undefined {
  if (sample === null || typeof sample !== 'object') return 'sample';
  // One pass over the keys: it runs twice per report (the runtime's check and this machine's guard).
  let known = 0;
  for (const key in sample) {
    const value = (sample as Readonly<Record<string, unknown>>)[key];
    if (key !== 'load' && key !== 'latencyMs' && key !== 'score') return 'sample';
    if (value === undefined) continue;
    if (!isGoodValue(key, value)) return key;
    known++;
  }
  return known === 0 ? 'sample' : undefined;
}

/** What is wrong with a sample {@link badSampleField} refuses, in words; undefined when it is good. */
export function sampleProblem(sample: NodeSample): string | undefined {
  const bad = badSampleField(sample);
  if (bad === undefined) return undefined;
  if (bad !== 'sample') {
    const value = (sample as Readonly<Record<string, unknown>>)[bad];
    return `"${bad}" must be a number from 0 to ${TELEMETRY_LIMITS[bad]}${bad === 'score' ? ' (and > 0)' : ''}, got ${String(value)}`;
  }
  if (sample === null || typeof sample !== 'object') return `a sample must be an object { load?, latencyMs?, score? }, got ${String(sample)}`;
  const unknown = Object.keys(sample).filter((k) => k !== 'load' && k !== 'latencyMs' && k !== 'score');
  if (unknown.length > 0) return `unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')} (a sample has load, latencyMs, score)`;
  return 'the sample has none of load, latencyMs, score';
}

/** `ewma ← α·sample + (1−α)·ewma`; the first sample initialises. */
export function ewma(previous: number | undefined, sample: number | undefined, alpha: number): number | undefined {
  if (sample === undefined) return previous;
  return previous === undefined ? sample : alpha * sample + (1 - alpha) * previous;
}

/**
 * The fields one good sample changes: the sample count and the EWMA of each field it carries
 * (only those, so `assign` copies the context once; this runs on every report).
 */
export function sampleUpdate(ctx: NodeContext, sample: NodeSample): Partial<NodeContext> {
  const alpha = ctx.settings.alpha;
  const update: { -readonly [K in keyof NodeContext]?: NodeContext[K] } = { samples: ctx.samples + 1 };
  if (sample.load !== undefined) update.load = ewma(ctx.load, sample.load, alpha);
  if (sample.latencyMs !== undefined) update.latencyMs = ewma(ctx.latencyMs, sample.latencyMs, alpha);
  if (sample.score !== undefined) update.score = ewma(ctx.score, sample.score, alpha);
  return update;
}

/**
 * The values routing uses: measured EWMAs, else the declared ones. Written into `out` (a new
 * object by default), so the runtime builds a node's telemetry entry in one allocation.
 */
export function effectiveValues<T extends { load?: number; latencyMs?: number; score?: number }>(ctx: NodeContext, out: T = {} as T): T {
  const latencyMs = ctx.latencyMs ?? ctx.settings.declared.latencyMs;
  const score = ctx.score ?? ctx.settings.declared.score;
  if (ctx.load !== undefined) out.load = ctx.load;
  if (latencyMs !== undefined) out.latencyMs = latencyMs;
  if (score !== undefined) out.score = score;
  return out;
}

// Every node of a swarm gets the same settings object: resolved once per input object, not per node.
