import type { Route } from '../core/types.js';

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

  constructor(private readonly maxHistory: number) {}

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
    const held = this.count - this.droppedSteps;
    for (const [layer, input] of inputs) {
      const own = this.byLayer.get(layer);
      const filled = backfill.get(layer);
      // Appended in place: a step costs O(boundaries), not O(history).
      const list = own !== undefined && own.length === held ? own : filled !== undefined && filled.length === held ? [...filled] : held === 0 ? [] : undefined;
      if (list === undefined) continue; // no complete history: this boundary cannot be replayed (it is not kept at all)
      list.push(input);
      next.set(layer, list);
    }
    this.count++;
    if (this.count - this.droppedSteps > this.maxHistory) {
      this.droppedSteps++;
      for (const list of next.values()) list.shift();
    }
    this.byLayer = next;
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
