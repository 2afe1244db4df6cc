/**
 * A bounded history of heartbeat inter-arrival times, persistent (every update returns a new
 * history and leaves the old one valid), with the running sums that give the mean and variance in
 * O(1). Akka keeps the same history as an immutable vector; here it is a list of small chunks, so
 * one update copies at most one chunk and the chunk list (≈ 2·√max values), not the whole history.
 */

/** Values per chunk. */
const CHUNK = 32;

/** Inter-arrival times of one node's heartbeats, oldest first, at most `max` of them. */
export interface HeartbeatHistory {
  /** The largest number of intervals kept; the oldest is dropped beyond it. */
  readonly max: number;
  /** The intervals, in chunks of at most 32, oldest first; the first chunk starts at `head`. */
  readonly chunks: readonly (readonly number[])[];
  readonly head: number;
  readonly size: number;
  readonly sum: number;
  readonly sumSq: number;
}

/**
 * An empty history keeping at most `max` intervals.
 * @throws {RangeError} when `max` is not an integer >= 1
 */
export function emptyHistory(max: number): HeartbeatHistory {
  if (!(Number.isInteger(max) && max >= 1)) throw new RangeError(`heartbeat history: max must be an integer >= 1, got ${String(max)}`);
  return { max, chunks: [], head: 0, size: 0, sum: 0, sumSq: 0 };
}

/** Sums recomputed from the values, so add-and-subtract rounding never accumulates. */
function resum(h: Omit<HeartbeatHistory, 'sum' | 'sumSq'>): HeartbeatHistory {
  let sum = 0;
  let sumSq = 0;
  h.chunks.forEach((chunk, c) => {
    for (let i = c === 0 ? h.head : 0; i < chunk.length; i++) {
      const x = chunk[i] as number;
      sum += x;
      sumSq += x * x;
    }
  });
  return { ...h, sum, sumSq };
}

/**
 * The history with one more interval, dropping the oldest beyond `max`.
 * @throws {RangeError} for an interval that is not a finite number >= 0
 */
export function recordInterval(h: HeartbeatHistory, intervalMs: number): HeartbeatHistory {
  if (!(Number.isFinite(intervalMs) && intervalMs >= 0)) throw new RangeError(`heartbeat history: interval must be a finite number >= 0, got ${String(intervalMs)}`);
  const last = h.chunks[h.chunks.length - 1];
  const chunks = last !== undefined && last.length < CHUNK ? [...h.chunks.slice(0, -1), [...last, intervalMs]] : [...h.chunks, [intervalMs]];
  const grown = { max: h.max, chunks, head: h.head, size: h.size + 1, sum: h.sum + intervalMs, sumSq: h.sumSq + intervalMs * intervalMs };
  if (grown.size <= h.max) return grown;
  const first = chunks[0] as readonly number[];
  const dropped = first[h.head] as number;
  if (h.head + 1 < first.length) {
    return { ...grown, head: h.head + 1, size: h.max, sum: grown.sum - dropped, sumSq: grown.sumSq - dropped * dropped };
  }
  // The first chunk is used up: drop it, and take the chance to recompute the sums exactly.
  return resum({ max: h.max, chunks: chunks.slice(1), head: 0, size: h.max });
}

/** The intervals, oldest first (for tests and debugging; O(size)). */
export function historyValues(h: HeartbeatHistory): number[] {
  const out: number[] = [];
  h.chunks.forEach((chunk, c) => out.push(...(c === 0 ? chunk.slice(h.head) : chunk)));
  return out;
}

/** The mean interval, or NaN for an empty history. */
export function historyMean(h: HeartbeatHistory): number {
  return h.size === 0 ? Number.NaN : h.sum / h.size;
}

/** The population standard deviation of the intervals, or NaN for an empty history. */
export function historyStdDev(h: HeartbeatHistory): number {
  if (h.size === 0) return Number.NaN;
  const mean = h.sum / h.size;
  return Math.sqrt(Math.max(h.sumSq / h.size - mean * mean, 0));
}
