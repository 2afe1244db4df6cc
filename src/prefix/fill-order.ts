/**
 * Where a new prompt goes (docs/prefix-cache.md, "Choosing the copy"): per model, the copies
 * ordered by their **fill**, the new prompt tokens the index recorded on a copy divided by the
 * tokens its KV memory holds. A prompt no copy holds enough of goes to the least-filled copy, so
 * new prefixes spread over the copies in proportion to their caches and every copy's working set
 * stays within its memory (SGLang places them on the smallest radix tree for the same reason).
 *
 * An indexed min-heap per model (the runtime's {@link IndexedHeap}): recording a prompt moves its
 * copy down in O(log copies); the least-filled eligible copy is found by walking the heap in
 * order, at most {@link FILL_VISITED} copies, never by scanning every copy. A copy that cannot
 * take a prompt when it is passed over (broken, suspect) is raised just past the copy that took
 * it, so it never falls behind while it is out and does not take every new prompt when it is
 * back; a copy added or wiped starts level with the least-filled one for the same reason.
 */
import { IndexedHeap, type HeapItem } from '../runtime/indexed-heap.js';

/** What the order keeps of a copy: its fill, its model and its place in that model's heap (`at[0]`). */
export interface FillSlot extends HeapItem {
  readonly id: string;
  /** New prompt tokens recorded ÷ the copy's capacity in tokens (a capacity of 0 counts as 1 token). */
  fill: number;
  /** The model whose heap holds it, undefined when out. */
  fillModel: string | undefined;
}

/** At most this many copies are looked at for one new prompt (ineligible ones are passed over). */
export const FILL_VISITED = 16;

/** Fill order, ties by id (deterministic). */
function less(a: FillSlot, b: FillSlot): boolean {
  return a.fill < b.fill || (a.fill === b.fill && a.id < b.id);
}

/** The next double above `x` (x finite and ≥ 0). */
function above(x: number): number {
  return x === 0 ? Number.MIN_VALUE : x + x * Number.EPSILON;
}

/** One model's copies by fill: the indexed heap, plus an in-order walk and a key that grows. */
class FillHeap<C extends FillSlot> extends IndexedHeap<C> {
  constructor() {
    super(less, 0);
  }

  /** `c`'s fill grew: it moves down. */
  grew(c: C): void {
    this.down(c.at[0] as number);
  }

  /** The first copy `eligible` accepts, among the `limit` least filled; the ones passed over are raised just past it. */
  least(eligible: (c: C) => boolean, limit: number): C | undefined {
    const items = this.items;
    if (items.length === 0) return undefined;
    // Walk the heap in fill order: a small frontier of heap positions, smallest fill first.
    const frontier = [0];
    const passed: C[] = [];
    let found: C | undefined;
    for (let visited = 0; visited < limit && frontier.length > 0; visited++) {
      let k = 0;
      for (let i = 1; i < frontier.length; i++) if (less(items[frontier[i] as number] as C, items[frontier[k] as number] as C)) k = i;
      const at = frontier[k] as number;
      frontier[k] = frontier[frontier.length - 1] as number;
      frontier.pop();
      const c = items[at] as C;
      if (eligible(c)) {
        found = c;
        break;
      }
      passed.push(c);
      if (2 * at + 1 < items.length) frontier.push(2 * at + 1);
      if (2 * at + 2 < items.length) frontier.push(2 * at + 2);
    }
    // Raised after the walk (moving them during it would reorder the heap under the frontier), just
    // past the copy that took the prompt, or the first not looked at: the next walk reaches those first.
    let ref = found?.fill;
    if (ref === undefined) for (const at of frontier) ref = Math.min(ref ?? Infinity, (items[at] as C).fill);
    const to = above(ref ?? passed[passed.length - 1]?.fill ?? 0);
    for (const c of passed) {
      if (c.fill >= to) continue;
      c.fill = to;
      this.down(c.at[0] as number);
    }
    return found;
  }
}

/** See the module comment. */
export class FillOrder<C extends FillSlot> {
  private readonly heaps = new Map<string, FillHeap<C>>();

  /** Adds `c` to `modelId`'s order (taking it out of any other first), level with its least-filled copy. */
  add(modelId: string, c: C): void {
    this.remove(c);
    let heap = this.heaps.get(modelId);
    if (heap === undefined) this.heaps.set(modelId, (heap = new FillHeap<C>()));
    c.fill = heap.peek()?.fill ?? 0;
    c.fillModel = modelId;
    heap.push(c);
  }

  /** Takes `c` out of its model's order. */
  remove(c: C): void {
    const model = c.fillModel;
    const heap = model === undefined ? undefined : this.heaps.get(model);
    if (heap === undefined || !heap.remove(c)) return;
    if (heap.size === 0) this.heaps.delete(model as string);
    c.fillModel = undefined;
  }

  /** `c` took `tokens` new prompt tokens, of a capacity of `capacity` tokens (0 counts as 1). */
  grew(c: C, tokens: number, capacity: number): void {
    const heap = c.fillModel === undefined ? undefined : this.heaps.get(c.fillModel);
    if (heap === undefined || !heap.has(c) || !(tokens > 0)) return;
    c.fill += tokens / Math.max(capacity, 1);
    heap.grew(c);
  }

  /**
   * The least-filled copy of `modelId` that `eligible` accepts, among the {@link FILL_VISITED}
   * least filled; the copies passed over are raised just past its fill (or past the copies not
   * looked at, when none was eligible).
   */
  least(modelId: string, eligible: (c: C) => boolean): C | undefined {
    return this.heaps.get(modelId)?.least(eligible, FILL_VISITED);
  }
}
