/**
 * The discrete-event queue: a binary min-heap ordered by time, then by insertion order, so two
 * events at the same instant always fire in the order they were scheduled (determinism).
 */
export class EventQueue<T> {
  private readonly times: number[] = [];
  private readonly seqs: number[] = [];
  private readonly items: T[] = [];
  private seq = 0;

  /** Number of pending events. */
  get size(): number {
    return this.items.length;
  }

  /** Schedules `item` at `time`. */
  push(time: number, item: T): void {
    const times = this.times;
    const seqs = this.seqs;
    const items = this.items;
    let i = items.length;
    const s = this.seq++;
    times.push(time);
    seqs.push(s);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pt = times[parent] as number;
      if (pt < time || (pt === time && (seqs[parent] as number) < s)) break;
      times[i] = pt;
      seqs[i] = seqs[parent] as number;
      items[i] = items[parent] as T;
      i = parent;
    }
    times[i] = time;
    seqs[i] = s;
    items[i] = item;
  }

  /** The time of the next event, or `Infinity` when empty. */
  peekTime(): number {
    return this.items.length === 0 ? Infinity : (this.times[0] as number);
  }

  /** Removes and returns the next event's item (call `peekTime` first for its time). */
  pop(): T | undefined {
    const items = this.items;
    const n = items.length;
    if (n === 0) return undefined;
    const times = this.times;
    const seqs = this.seqs;
    const top = items[0] as T;
    const lastTime = times.pop() as number;
    const lastSeq = seqs.pop() as number;
    const lastItem = items.pop() as T;
    const size = n - 1;
    if (size === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= size) break;
      const r = l + 1;
      let c = l;
      if (r < size) {
        const lt = times[l] as number;
        const rt = times[r] as number;
        if (rt < lt || (rt === lt && (seqs[r] as number) < (seqs[l] as number))) c = r;
      }
      const ct = times[c] as number;
      if (lastTime < ct || (lastTime === ct && lastSeq < (seqs[c] as number))) break;
      times[i] = ct;
      seqs[i] = seqs[c] as number;
      items[i] = items[c] as T;
      i = c;
    }
    times[i] = lastTime;
    seqs[i] = lastSeq;
    items[i] = lastItem;
    return top;
  }
}
