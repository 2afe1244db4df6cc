/**
 * The waiting room of `swarm.admit` for one model (docs/admission.md, "The queue"): one band per
 * priority, served highest first, except that a band under its minimum share of the recent
 * admissions is served first; first come first served within a band, or earliest deadline first;
 * a resumed request at the head of its band. Every operation is O(log n) in the waiters (indexed
 * binary heaps), plus O(bands) to pick a band.
 */
import { IndexedHeap, type HeapItem } from './indexed-heap.js';

/** One request waiting for room. */
export interface Waiter extends HeapItem {
  readonly seq: number;
  readonly priority: number;
  /** When it gives up, on the clock; Infinity without a deadline. */
  readonly deadlineAt: number;
  readonly resumed: boolean;
}

/** The heaps' slots in a waiter's `at`. */
const ORDER = 0;
const VICTIM = 1;

/** One priority's waiters, in service order and in eviction order. */
interface Band<W extends Waiter> {
  readonly priority: number;
  readonly order: IndexedHeap<W>;
  readonly victims: IndexedHeap<W>;
}

/** The queue of one model. */
export class AdmissionQueue<W extends Waiter> {
  private readonly bands = new Map<number, Band<W>>();
  /** Priorities of the bands, highest first. */
  private readonly priorities: number[] = [];
  /** The last `window` admissions' priorities (a ring), and how many of each. */
  private readonly ring: number[] = [];
  private ringAt = 0;
  private readonly counts = new Map<number, number>();
  private count = 0;

  /**
   * @param byDeadline earliest deadline first within a band (else first come first served)
   * @param shares each band's minimum share of admissions
   * @param window how many recent admissions the shares are counted over
   */
  constructor(
    private readonly byDeadline: boolean,
    private readonly shares: ReadonlyMap<number, number>,
    private readonly window: number,
  ) {}

  /** Waiters queued. */
  get size(): number {
    return this.count;
  }

  /** Waiters queued per band, highest priority first. */
  depths(): { priority: number; queued: number }[] {
    return this.priorities.map((priority) => ({ priority, queued: (this.bands.get(priority) as Band<W>).order.size }));
  }

  /** Waiters in bands of `priority` or higher: those served before a newcomer of that priority. */
  ahead(priority: number): number {
    let n = 0;
    for (const p of this.priorities) if (p >= priority) n += (this.bands.get(p) as Band<W>).order.size;
    return n;
  }

  /** Whether `priority`'s band has a share and is under it now (so it is served before higher bands). */
  underShare(priority: number): boolean {
    const share = this.shares.get(priority);
    return share !== undefined && share > 0 && (this.counts.get(priority) ?? 0) < share * Math.max(1, this.ring.length);
  }

  /** Queues a waiter. */
  push(w: W): void {
    let band = this.bands.get(w.priority);
    if (band === undefined) {
      const less = this.byDeadline ? deadlineFirst : arrivalFirst;
      band = { priority: w.priority, order: new IndexedHeap<W>(less, ORDER), victims: new IndexedHeap<W>(evictFirst, VICTIM) };
      this.bands.set(w.priority, band);
      let i = 0;
      while (i < this.priorities.length && (this.priorities[i] as number) > w.priority) i++;
      this.priorities.splice(i, 0, w.priority);
    }
    band.order.push(w);
    band.victims.push(w);
    this.count++;
  }

  /** Takes a waiter out (served, evicted, aborted or past its deadline); false when it is not queued. */
  remove(w: W): boolean {
    const band = this.bands.get(w.priority);
    if (band === undefined || !band.order.remove(w)) return false;
    band.victims.remove(w);
    this.count--;
    if (band.order.size === 0) {
      this.bands.delete(w.priority);
      this.priorities.splice(this.priorities.indexOf(w.priority), 1);
    }
    return true;
  }

  /** The waiter to serve next: the head of the band furthest under its share, else of the highest band. */
  next(): W | undefined {
    let best: Band<W> | undefined;
    let deficit = 0;
    if (this.shares.size > 0) {
      const filled = Math.max(1, this.ring.length);
      for (const p of this.priorities) {
        const share = this.shares.get(p);
        if (share === undefined) continue;
        const d = share - (this.counts.get(p) ?? 0) / filled;
        if (d > deficit) {
          deficit = d;
          best = this.bands.get(p);
        }
      }
    }
    best ??= this.bands.get(this.priorities[0] as number);
    return best?.order.peek();
  }

  /** The waiter an arrival of `priority` may push out of a full queue: the newest of the lowest band below it. */
  victimFor(priority: number): W | undefined {
    const lowest = this.priorities[this.priorities.length - 1];
    if (lowest === undefined || lowest >= priority) return undefined;
    return this.bands.get(lowest)?.victims.peek();
  }

  /** Counts one admission of `priority` towards the shares' window. */
  admitted(priority: number): void {
    if (this.shares.size === 0) return;
    if (this.ring.length < this.window) this.ring.push(priority);
    else {
      const old = this.ring[this.ringAt] as number;
      this.counts.set(old, (this.counts.get(old) ?? 1) - 1);
      this.ring[this.ringAt] = priority;
      this.ringAt = (this.ringAt + 1) % this.window;
    }
    this.counts.set(priority, (this.counts.get(priority) ?? 0) + 1);
  }
}

/** A resumed waiter first, then the earlier arrival. */
function arrivalFirst(a: Waiter, b: Waiter): boolean {
  return a.resumed !== b.resumed ? a.resumed : a.seq < b.seq;
}

/** A resumed waiter first, then the earlier deadline, then the earlier arrival. */
function deadlineFirst(a: Waiter, b: Waiter): boolean {
  if (a.resumed !== b.resumed) return a.resumed;
  return a.deadlineAt !== b.deadlineAt ? a.deadlineAt < b.deadlineAt : a.seq < b.seq;
}

/** Evicted first: one not resumed, then the newest. */
function evictFirst(a: Waiter, b: Waiter): boolean {
  return a.resumed !== b.resumed ? b.resumed : a.seq > b.seq;
}
