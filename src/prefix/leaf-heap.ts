/**
 * A copy's leaves waiting for eviction in the prefix index (prefix-index.ts): a binary min-heap on
 * the stamp each leaf was queued with, kept in two parallel arrays (entries, stamps) on the copy.
 * A stale item (touched since, or no longer a leaf) is dealt with by the caller when popped.
 */
import type { CopyCache, Entry } from './prefix-index.js';

/** Queues leaf `e` of copy `c` at its stamp now. */
export function pushLeaf(c: CopyCache, e: Entry): void {
  e.inHeap = true;
  const heap = c.heap;
  const stamps = c.heapStamps;
  let i = heap.length;
  heap.push(e);
  stamps.push(e.stamp);
  const s = e.stamp;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const ps = stamps[parent] as number;
    if (ps <= s) break;
    heap[i] = heap[parent] as Entry;
    stamps[i] = ps;
    i = parent;
  }
  heap[i] = e;
  stamps[i] = s;
}

/** Takes the least recently stamped leaf candidate, with the stamp it was queued at. */
export function popLeaf(c: CopyCache): [Entry, number] {
  const heap = c.heap;
  const stamps = c.heapStamps;
  const top = heap[0] as Entry;
  const topStamp = stamps[0] as number;
  const last = heap.pop() as Entry;
  const lastStamp = stamps.pop() as number;
  const n = heap.length;
  if (n > 0) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && (stamps[r] as number) < (stamps[l] as number) ? r : l;
      if ((stamps[child] as number) >= lastStamp) break;
      heap[i] = heap[child] as Entry;
      stamps[i] = stamps[child] as number;
      i = child;
    }
    heap[i] = last;
    stamps[i] = lastStamp;
  }
  return [top, topStamp];
}
