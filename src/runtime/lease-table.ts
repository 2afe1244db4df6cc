import { SwarmError } from '../core/errors.js';
import type { Lease, TimeSource } from './types.js';

/** One open reservation. */
interface LeaseRecord {
  readonly lease: Lease;
  /** When it expires on the table's steady time (see {@link LeaseTable}). */
  readonly deadline: number;
  /** Its nodes still in the swarm: a removed node leaves every lease, so one added back under its id starts clean. */
  held: readonly string[];
  /** Its index in the heap. */
  pos: number;
}

/** At most this many leases expire per call, so a mass expiry never blocks for long. */
export const EXPIRY_SLICE = 1024;

/**
 * The open reservations (`route(…, { reserve: true })`), each counted as in flight on its nodes
 * (through `hold`) until released or expired.
 *
 * Expiry goes by deadline, not issue order: leases sit in a binary min-heap on their deadline,
 * and each call expires at most {@link EXPIRY_SLICE} of them. Deadlines are kept on the table's
 * own steady time, which advances by the clock's forward steps only: a clock that steps back
 * neither brings an expired lease back nor holds a lease past its time-to-live once the clock
 * moves on. `Lease.expiresAt` is the clock reading at which the lease expires when the clock
 * runs steadily. A clock reading that is not a finite number is refused with a `SwarmError`.
 */
export class LeaseTable {
  private readonly records = new Map<string, LeaseRecord>();
  private readonly heap: LeaseRecord[] = [];
  private seq = 0;
  private last: number | undefined;
  private steady = 0;

  /**
   * @param ttlMs how long a lease lives
   * @param hold called with +1 for every node of a new lease, -1 when it ends
   */
  constructor(
    private readonly ttlMs: number,
    private readonly clock: TimeSource,
    private readonly hold: (nodeId: string, delta: 1 | -1) => void,
    /** Put before every lease id. */
    private readonly prefix = '',
    /** Told of every lease that ends (released, expired), after its nodes stopped counting it. */
    private readonly ended?: (lease: Lease) => void,
  ) {}

  /** Leases open in the table (expired ones not yet swept included; see {@link inFlight}). */
  get size(): number {
    return this.records.size;
  }

  /** Reads the clock, checks it, and advances the steady time by its forward step. */
  now(): { readonly now: number; readonly steady: number } {
    const now: unknown = this.clock.now();
    if (typeof now !== 'number' || !Number.isFinite(now)) {
      throw new SwarmError('InvalidInput', `the swarm's clock returned ${typeof now === 'string' ? `"${now}"` : String(now)} from now(); a clock must return finite milliseconds`);
    }
    if (this.last !== undefined && now > this.last) this.steady += now - this.last;
    this.last = now;
    return { now, steady: this.steady };
  }

  /** A fresh lease id that no lease will take (an admitted session's id before its lease: docs/admission.md). */
  mint(): string {
    return `${this.prefix}lease-${++this.seq}`;
  }

  /** Opens a lease on `nodes` (distinct ids) for `modelId`. */
  reserve(modelId: string, nodes: readonly string[]): Lease {
    const { now, steady } = this.now();
    const id = `${this.prefix}lease-${++this.seq}`;
    const lease: Lease = Object.freeze({ id, modelId, nodes: Object.freeze([...nodes]), expiresAt: now + this.ttlMs });
    const record: LeaseRecord = { lease, deadline: steady + this.ttlMs, held: lease.nodes, pos: this.heap.length };
    this.records.set(id, record);
    this.heap.push(record);
    this.up(record.pos);
    for (const n of record.held) this.hold(n, 1);
    return lease;
  }

  /**
   * Ends an open lease and returns the nodes it still held; undefined (and nothing changes) for a
   * lease never issued or already ended. An expired lease ends here even if no sweep reached it
   * yet, and also gives undefined.
   */
  end(id: unknown): readonly string[] | undefined {
    const record = typeof id === 'string' ? this.records.get(id) : undefined;
    if (record === undefined) return undefined;
    const { steady } = this.now();
    this.remove(record);
    return record.deadline <= steady ? undefined : record.held;
  }

  /** The nodes an open lease still holds (a removed node leaves every lease); undefined for an unknown lease. */
  held(id: unknown): readonly string[] | undefined {
    return typeof id === 'string' ? this.records.get(id)?.held : undefined;
  }

  /** Whether `id` names an open, unexpired lease. Reads the clock. */
  isOpen(id: unknown): boolean {
    const record = typeof id === 'string' ? this.records.get(id) : undefined;
    return record !== undefined && record.deadline > this.now().steady;
  }

  /** Expires at most {@link EXPIRY_SLICE} leases past their deadline, earliest first. */
  expire(): void {
    const { steady } = this.now();
    for (let i = 0; i < EXPIRY_SLICE; i++) {
      const top = this.heap[0];
      if (top === undefined || top.deadline > steady) return;
      this.remove(top);
    }
  }

  /**
   * Reservations neither released nor expired: the leases open in the table less those past
   * their deadline that no sweep has reached yet (counted without ending them, in time
   * proportional to their number).
   */
  inFlight(): number {
    this.expire();
    const { steady } = this.now();
    let expired = 0;
    const stack = [0];
    while (stack.length > 0) {
      const i = stack.pop() as number;
      const r = this.heap[i];
      if (r === undefined || r.deadline > steady) continue;
      expired++;
      stack.push(2 * i + 1, 2 * i + 2);
    }
    return this.records.size - expired;
  }

  /** Whether an open lease of `modelId` holds a node of `nodes` (a request in flight on a copy of them). */
  runsOn(modelId: string, nodes: ReadonlySet<string>): boolean {
    this.expire();
    for (const r of this.records.values()) if (r.lease.modelId === modelId && r.held.some((n) => nodes.has(n))) return true;
    return false;
  }

  /** Takes a removed node out of every open lease (its in-flight count goes with the node). */
  dropNode(nodeId: string): void {
    for (const record of this.records.values()) {
      if (record.held.includes(nodeId)) record.held = record.held.filter((n) => n !== nodeId);
    }
  }

  private remove(record: LeaseRecord): void {
    this.records.delete(record.lease.id);
    const heap = this.heap;
    const last = heap.pop() as LeaseRecord;
    if (last !== record) {
      heap[record.pos] = last;
      last.pos = record.pos;
      this.down(last.pos);
      this.up(last.pos);
    }
    for (const n of record.held) this.hold(n, -1);
    this.ended?.(record.lease);
  }

  private up(i: number): void {
    const heap = this.heap;
    const r = heap[i] as LeaseRecord;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as LeaseRecord;
      if (p.deadline <= r.deadline) break;
      heap[i] = p;
      p.pos = i;
      i = parent;
    }
    heap[i] = r;
    r.pos = i;
  }

  private down(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const r = heap[i] as LeaseRecord;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && (heap[right] as LeaseRecord).deadline < (heap[left] as LeaseRecord).deadline ? right : left;
      const c = heap[child] as LeaseRecord;
      if (c.deadline >= r.deadline) break;
      heap[i] = c;
      c.pos = i;
      i = child;
    }
    heap[i] = r;
    r.pos = i;
  }
}
