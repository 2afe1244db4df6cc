/**
 * Where a new prompt goes (docs/prefix-cache.md, "Choosing the copy"): per model, the copies
 * ordered by their **fill**, the new prompt tokens the index recorded on a copy divided by the
 * tokens its KV memory holds. A prompt no copy holds enough of goes to the least-filled copy, so
 * new prefixes spread over the copies in proportion to their caches and every copy's working set
 * stays within its memory (SGLang places them on the smallest radix tree for the same reason).
 *
 * An indexed min-heap per model: recording a prompt moves its copy down in O(log copies); the
 * least-filled eligible copy is found by walking the heap in order, at most
 * {@link FILL_VISITED} copies, never by scanning every copy. A copy added or wiped starts at the
 * model's lowest fill, level with the others, so a new or emptied copy takes its share of new
 * prompts from then on, not every one until it catches up.
 */

/** What the order keeps of a copy: its fill and its place in its model's heap. */
export interface FillSlot {
  readonly id: string;
  /** New prompt tokens recorded ÷ the copy's capacity in tokens (Infinity when it holds none). */
  fill: number;
  /** Its index in its model's heap, -1 when out. */
  heapAt: number;
}

/** At most this many copies are looked at for one new prompt (ineligible ones are passed over). */
export const FILL_VISITED = 16;

/** See the module comment. */
export class FillOrder<C extends FillSlot> {
  private readonly heaps = new Map<string, C[]>();

  /** Adds `c` to `modelId`'s order at the model's lowest fill (0 for its first copy). */
  add(modelId: string, c: C, capacity: number): void {
    let heap = this.heaps.get(modelId);
    if (heap === undefined) this.heaps.set(modelId, (heap = []));
    c.fill = capacity > 0 ? this.level(heap) : Infinity;
    c.heapAt = heap.length;
    heap.push(c);
    this.up(heap, c.heapAt);
  }

  /** Takes `c` out of `modelId`'s order. */
  remove(modelId: string, c: C): void {
    const heap = this.heaps.get(modelId);
    if (heap === undefined || c.heapAt < 0 || heap[c.heapAt] !== c) return;
    const at = c.heapAt;
    const last = heap.pop() as C;
    c.heapAt = -1;
    if (last !== c) {
      heap[at] = last;
      last.heapAt = at;
      this.down(heap, at);
      this.up(heap, last.heapAt);
    }
    if (heap.length === 0) this.heaps.delete(modelId);
  }

  /** `c` took `tokens` new prompt tokens, of a capacity of `capacity` tokens. */
  grew(modelId: string, c: C, tokens: number, capacity: number): void {
    const heap = this.heaps.get(modelId);
    if (heap === undefined || heap[c.heapAt] !== c || tokens <= 0 || capacity <= 0) return;
    c.fill += tokens / capacity;
    this.down(heap, c.heapAt);
  }

  /** `c` was wiped, or its capacity changed from none to some: it starts again at the model's lowest fill. */
  reset(modelId: string, c: C, capacity: number): void {
    this.remove(modelId, c);
    this.add(modelId, c, capacity);
  }

  /** The least-filled copy of `modelId` that `eligible` accepts, among the {@link FILL_VISITED} least filled. */
  least(modelId: string, eligible: (c: C) => boolean): C | undefined {
    const heap = this.heaps.get(modelId);
    if (heap === undefined || heap.length === 0) return undefined;
    // Walk the heap in fill order: a small frontier of heap positions, smallest fill first.
    const frontier = [0];
    for (let visited = 0; visited < FILL_VISITED && frontier.length > 0; visited++) {
      let k = 0;
      for (let i = 1; i < frontier.length; i++) if (before(heap, frontier[i] as number, frontier[k] as number)) k = i;
      const at = frontier[k] as number;
      frontier[k] = frontier[frontier.length - 1] as number;
      frontier.pop();
      const c = heap[at] as C;
      if (eligible(c)) return c;
      if (2 * at + 1 < heap.length) frontier.push(2 * at + 1);
      if (2 * at + 2 < heap.length) frontier.push(2 * at + 2);
    }
    return undefined;
  }

  private level(heap: readonly C[]): number {
    const top = heap[0];
    return top === undefined || top.fill === Infinity ? 0 : top.fill;
  }

  private up(heap: C[], at: number): void {
    let i = at;
    const c = heap[i] as C;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as C;
      if (!less(c, p)) break;
      heap[i] = p;
      p.heapAt = i;
      i = parent;
    }
    heap[i] = c;
    c.heapAt = i;
  }

  private down(heap: C[], at: number): void {
    let i = at;
    const c = heap[i] as C;
    const n = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && less(heap[r] as C, heap[l] as C) ? r : l;
      const ch = heap[child] as C;
      if (!less(ch, c)) break;
      heap[i] = ch;
      ch.heapAt = i;
      i = child;
    }
    heap[i] = c;
    c.heapAt = i;
  }
}

/** Fill order, ties by id (deterministic). */
function less(a: FillSlot, b: FillSlot): boolean {
  return a.fill < b.fill || (a.fill === b.fill && a.id < b.id);
}

function before<C extends FillSlot>(heap: readonly C[], i: number, j: number): boolean {
  return less(heap[i] as C, heap[j] as C);
}
