/** Released latencies of one node waiting to be fed as one sample. */
interface ReleaseWindow {
  fedAt: number;
  sum: number;
  count: number;
}

/**
 * The release window (`releaseSampleMs`): released latencies feed a node's EWMA at most once per
 * window. Within a window of the last feed a release is held; the first release after that
 * closes the window and is fed with what was held, as their mean. After a quiet gap (more than a
 * whole window with nothing released) what was held is fed on its own first and the new release
 * alone, so an old sample never masks a fresh one. A clock that stepped back ends the window
 * rather than freezing it. Plain data per node, in a `Map`.
 */
export class ReleaseSampler {
  private readonly windows = new Map<string, ReleaseWindow>();

  /** @param windowMs `releaseSampleMs`; 0 feeds every release alone. */
  constructor(private readonly windowMs: number) {}

  /** The latencies to feed now for one release on `nodeId` at time `now`: none, one or two. */
  sample(nodeId: string, latencyMs: number, now: number): number[] {
    const windowMs = this.windowMs;
    const w = this.windows.get(nodeId);
    if (w === undefined || windowMs === 0) {
      if (windowMs > 0) this.windows.set(nodeId, { fedAt: now, sum: 0, count: 0 });
      return [latencyMs];
    }
    const elapsed = now - w.fedAt;
    if (elapsed >= 0 && elapsed < windowMs) {
      w.sum += latencyMs;
      w.count++;
      return [];
    }
    const { sum, count } = w;
    w.fedAt = now;
    w.sum = 0;
    w.count = 0;
    if (count > 0 && (elapsed < 0 || elapsed >= 2 * windowMs)) return [sum / count, latencyMs]; // held across a quiet gap: on its own
    return [(sum + latencyMs) / (count + 1)];
  }

  /** Drops what a node had pending (it went down, or left). */
  forget(nodeId: string): void {
    this.windows.delete(nodeId);
  }
}
