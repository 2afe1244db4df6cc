import type { Route } from '../core/types.js';
import type { LeasedRoute } from '../runtime/types.js';

/**
 * A session's stored inputs, per stage boundary (the first layer of each stage of its route), for
 * replay into a replacement stage. Every boundary holds the same steps: `[dropped, steps)`.
 */
export class SessionHistory<T> {
  private byLayer = new Map<number, T[]>();
  /** Steps committed so far. */
  private count = 0;
  /** Oldest steps dropped past `maxHistory`. */
  private droppedSteps = 0;
  /** Bytes held at each boundary but the first (the `bytes` bound's count). */
  private bytesByLayer = new Map<number, number>();
  /** Times the later boundaries' history was dropped past the `bytes` bound. */
  private truncations = 0;

  /** @param bytes a bound on the bytes held at the boundaries after the first, and the size of an input */
  constructor(private readonly maxHistory: number, private readonly bytes?: { readonly max: number; readonly sizeOf: (input: unknown) => number }) {}

  /** Bytes held at the boundaries after the first (0 without a `bytes` bound). */
  get heldBytes(): number {
    let sum = 0;
    for (const b of this.bytesByLayer.values()) sum += b;
    return sum;
  }

  /** Times the later boundaries' history was dropped past the bytes bound. */
  get byteTruncations(): number {
    return this.truncations;
  }

  /** Steps committed. */
  get steps(): number {
    return this.count;
  }

  /** Steps no longer held (past `maxHistory`). */
  get dropped(): number {
    return this.droppedSteps;
  }

  /** A copy of the stored inputs at `layer`, oldest first, or undefined when the session has no complete history there. */
  at(layer: number): T[] | undefined {
    const held = this.count - this.droppedSteps;
    if (held === 0) return [];
    const list = this.byLayer.get(layer);
    return list !== undefined && list.length === held ? [...list] : undefined;
  }

  /**
   * Starts from steps run elsewhere (a generation resumed from a checkpoint): their inputs at
   * `layer`, oldest first; past `maxHistory` the oldest count as dropped. Only while empty.
   */
  restore(layer: number, inputs: readonly T[]): void {
    if (this.count > 0) throw new Error('a history is restored only before its first step');
    const dropped = Math.max(0, inputs.length - this.maxHistory);
    this.byLayer = new Map([[layer, inputs.slice(dropped)]]);
    this.count = inputs.length;
    this.droppedSteps = dropped;
  }

  /**
   * Commits one step: for every boundary of the route the step ended on, the inputs held before
   * (or, for a boundary that is new, `backfill` — the replay outputs that reached it) plus this
   * step's input there. Boundaries no longer in the route are forgotten: their history stops here.
   */
  commit(inputs: ReadonlyMap<number, T>, backfill: ReadonlyMap<number, readonly T[]>): void {
    const next = new Map<number, T[]>();
    const bytes = new Map<number, number>();
    const held = this.count - this.droppedSteps;
    const first = Math.min(...inputs.keys());
    const size = (x: T): number => (this.bytes === undefined ? 0 : this.bytes.sizeOf(x));
    for (const [layer, input] of inputs) {
      const own = this.byLayer.get(layer);
      const filled = backfill.get(layer);
      // Appended in place: a step costs O(boundaries), not O(history).
      const kept = own !== undefined && own.length === held;
      const list = kept ? own : filled !== undefined && filled.length === held ? [...filled] : held === 0 ? [] : undefined;
      if (list === undefined) continue; // no complete history: this boundary cannot be replayed (it is not kept at all)
      list.push(input);
      next.set(layer, list);
      if (layer !== first && this.bytes !== undefined) bytes.set(layer, (kept ? (this.bytesByLayer.get(layer) ?? 0) : list.slice(0, -1).reduce((sum, x) => sum + size(x), 0)) + size(input));
    }
    this.count++;
    if (this.count - this.droppedSteps > this.maxHistory) {
      this.droppedSteps++;
      for (const [layer, list] of next) {
        const gone = list.shift();
        const b = bytes.get(layer);
        if (b !== undefined && gone !== undefined) bytes.set(layer, b - size(gone));
      }
    }
    // Past the bytes bound: the later boundaries go; the first layer's inputs recompute them.
    let total = 0;
    for (const b of bytes.values()) total += b;
    if (this.bytes !== undefined && total > this.bytes.max) {
      for (const layer of bytes.keys()) next.delete(layer);
      bytes.clear();
      this.truncations++;
    }
    this.byLayer = next;
    this.bytesByLayer = bytes;
  }
}

/** This step's input at every boundary of the route it ended on. */
export function boundaryInputs<T>(route: Route, inputs: ReadonlyMap<number, T>): Map<number, T> {
  const out = new Map<number, T>();
  for (const s of route.stages) {
    const x = inputs.get(s.layerStart);
    if (x !== undefined || inputs.has(s.layerStart)) out.set(s.layerStart, x as T);
  }
  return out;
}

/** A leased route without its lease: the route a session's history is kept along. */
export function stripLease(leased: LeasedRoute): Route {
  const { lease: _lease, ...route } = leased;
  return route;
}
