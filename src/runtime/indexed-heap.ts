/**
 * A binary min-heap that knows where each item sits, so any item leaves in O(log n), not only the
 * top. An item may sit in several heaps at once: each heap keeps its index in the item's own
 * `at[slot]`, its `slot` being fixed at construction (admission's queue uses three: a band's
 * order, a band's eviction order, and every waiter's deadline).
 */

/** An item that can sit in indexed heaps: `at[slot]` is its index in heap `slot`, -1 outside. */
export interface HeapItem {
  readonly at: number[];
}

/** A min-heap on `less`, with O(log n) push, pop and removal of any item it holds. */
export class IndexedHeap<T extends HeapItem> {
  /** The heap array (a subclass may walk it; only this class reorders it). */
  protected readonly items: T[] = [];

  /**
   * @param less whether `a` comes before `b` (a strict order: ties broken by the caller)
   * @param slot which entry of an item's `at` this heap owns
   */
  constructor(
    protected readonly less: (a: T, b: T) => boolean,
    protected readonly slot: number,
  ) {}

  /** How many items it holds. */
  get size(): number {
    return this.items.length;
  }

  /** The first item, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** Whether `item` sits in this heap. */
  has(item: T): boolean {
    const i = item.at[this.slot] ?? -1;
    return i >= 0 && this.items[i] === item;
  }

  /** Adds an item (one not in this heap). */
  push(item: T): void {
    item.at[this.slot] = this.items.length;
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  /** Takes out and returns the first item. */
  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** Takes `item` out; false (nothing changes) when it is not in this heap. */
  remove(item: T): boolean {
    if (!this.has(item)) return false;
    const i = item.at[this.slot] as number;
    const last = this.items.pop() as T;
    item.at[this.slot] = -1;
    if (last !== item) {
      this.items[i] = last;
      last.at[this.slot] = i;
      this.down(i);
      this.up(last.at[this.slot] as number);
    }
    return true;
  }

  protected up(i: number): void {
    const items = this.items;
    const item = items[i] as T;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent] as T;
      if (!this.less(item, p)) break;
      items[i] = p;
      p.at[this.slot] = i;
      i = parent;
    }
    items[i] = item;
    item.at[this.slot] = i;
  }

  protected down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i] as T;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.less(items[right] as T, items[left] as T) ? right : left;
      const c = items[child] as T;
      if (!this.less(c, item)) break;
      items[i] = c;
      c.at[this.slot] = i;
      i = child;
    }
    items[i] = item;
    item.at[this.slot] = i;
  }
}
