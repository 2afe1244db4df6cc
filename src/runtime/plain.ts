/** Arguments as plain data, each field read once (a getter cannot change a value between check and use). */
import { effectiveValues, type NodeContext } from '../../machines/node.machine.js';
import type { NodeProfile, NodeTelemetry } from '../core/types.js';
import type { TelemetrySample } from './types.js';

/** A profile as plain data. */
export function plainProfile(profile: NodeProfile): NodeProfile {
  if (profile === null || typeof profile !== 'object') return profile;
  const { id, memoryGb, score, latencyMs, slots, loadGbPerSecond } = profile;
  return {
    id,
    memoryGb,
    ...(score !== undefined ? { score } : {}),
    ...(latencyMs !== undefined ? { latencyMs } : {}),
    ...(slots !== undefined ? { slots } : {}),
    ...(loadGbPerSecond !== undefined ? { loadGbPerSecond } : {}),
  };
}

/** A telemetry sample as plain data; one shape whatever it carries. */
export function plainSample(sample: TelemetrySample): TelemetrySample {
  if (sample === null || typeof sample !== 'object') return sample;
  const { load, latencyMs, score } = sample;
  // An unknown key makes the sample BadTelemetry whatever its values: keep it so the check sees it.
  for (const key in sample) if (key !== 'load' && key !== 'latencyMs' && key !== 'score') return { ...sample };
  return { load, latencyMs, score };
}

/**
 * A live node's table entry from its actor's context: `alive`, `samples` and the effective values
 * (measured EWMA, else declared), frozen. Once every field is known (the usual case) it is one
 * object literal of one shape; `effectiveValues` adding fields one by one to a two-field literal
 * grew a second backing store on every report. A field never measured keeps the previous entry's
 * value, which is the declared one: read from the entry just read, not from `ctx.settings.declared` (a
 * cache miss per report at 8,000 nodes).
 */
export function telemetryEntry(ctx: NodeContext, previous: NodeTelemetry): NodeTelemetry {
  const { load, samples } = ctx;
  const latencyMs = ctx.latencyMs ?? previous.latencyMs;
  const score = ctx.score ?? previous.score;
  if (load !== undefined && latencyMs !== undefined && score !== undefined) return Object.freeze({ alive: true, samples, load, latencyMs, score });
  return Object.freeze(effectiveValues<{ -readonly [K in keyof NodeTelemetry]: NodeTelemetry[K] }>(ctx, { alive: true, samples }));
}
