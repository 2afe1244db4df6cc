/**
 * The largest value a telemetry sample or a released latency may carry (docs/inputs.md,
 * "Telemetry bounds"). A value past its bound is refused as `BadTelemetry`, as NaN is: one absurd
 * sample (`latencyMs: 1e308`) would otherwise hold a node's EWMA off the routes for thousands of
 * samples (α = 0.3 takes ~2,000 samples to bring 1e308 back under 100 ms; from 600,000 ms it
 * takes ~21).
 */
export const TELEMETRY_LIMITS = Object.freeze({
  /** Ten minutes: far past any one request on a node still serving (a session stage times out after 30 s by default). */
  latencyMs: 600_000,
  /**
   * A utilisation: 1 is a node busy on every slot. Queue-based measures (a load average per
   * core, requests queued per slot) exceed 1; a thousand times over capacity is past any node
   * still answering, and its cost term (`load × 120`) is already 120,000.
   */
  load: 1_000,
  /**
   * A relative capability (1 is the reference node, higher is faster). Past a million the
   * capability term `100 / score` is below 0.0001 ms: a larger score changes no route.
   */
  score: 1_000_000,
});

/**
 * A measured duration as a latency sample within bounds: a clock that stepped back gives 0, a
 * step longer than `TELEMETRY_LIMITS.latencyMs` counts as that bound (for callers that measure
 * real time themselves, such as sessions; a caller's own figure past the bound is refused).
 */
export function boundedLatency(ms: number): number {
  return ms > TELEMETRY_LIMITS.latencyMs ? TELEMETRY_LIMITS.latencyMs : ms > 0 ? ms : 0;
}
