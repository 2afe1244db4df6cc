/**
 * `swarm.admit` and `swarm.saturation()` (docs/admission.md): a request is leased a route when a
 * copy has room on its nodes' slots, waits in a bounded priority queue otherwise, and is refused
 * with a typed `RoutingError` (`Saturated` with a retry-after estimate, `DeadlineExceeded`,
 * `Aborted`), never silently. Releases, expiries and node revivals wake the queue in order.
 * Times and timers come from the swarm's clock.
 */
import { admissionConfigIssue, checkAdmitOptions, type AdmissionConfig, type AdmitOptions } from '../core/admission-config.js';
import { RoutingError, SwarmError } from '../core/errors.js';
import { isIntact } from '../core/plan-index.js';
import type { NodeProfile, NodeStates, Route, SwarmPlan } from '../core/types.js';
import { AdmissionQueue, type Waiter } from './admission-queue.js';
import { isTimerClock } from './clock.js';
import { IndexedHeap } from './indexed-heap.js';
import type { CopySaturation, Saturation } from './saturation.js';
import { SlotLedger, type CopyShape } from './slot-ledger.js';
import type { Clock, Lease, LeasedRoute, SwarmRequest, TimeSource } from './types.js';

/** What admission reads and calls in its Swarm. */
export interface AdmissionHost {
  readonly clock: Clock | TimeSource;
  /** The plan now. */
  plan(): SwarmPlan;
  /** The routing view's nodes (alive, suspect, telemetry). */
  nodes(): NodeStates;
  /** A member's profile; undefined for a stranger. */
  profileOf(nodeId: string): NodeProfile | undefined;
  /** `swarm.route(request)`: checked, chosen, no lease (throws as `route` does). */
  route(request: SwarmRequest): Route;
  /** Leases `route` as `route(…, { reserve: true })` would. */
  lease(route: Route, request: SwarmRequest): LeasedRoute;
  /** Ends the leases past their time. */
  expire(): void;
  /** The reservations other replicas announced on a node (shared load); none without it. */
  remote?(nodeId: string): number;
}

/** A queued request, with how it ends. */
interface Entry extends Waiter {
  readonly model: string;
  readonly request: SwarmRequest;
  /** The one route it waits for (a resumed session's), instead of the router's choice. */
  readonly fixed: Route | undefined;
  readonly resolve: (route: LeasedRoute) => void;
  readonly reject: (error: Error) => void;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/** A retry-after estimate before any lease has ended, ms. */
const FIRST_HOLD_MS = 1000;
/** The deadline heap's slot in a waiter's `at` (the band's heaps use 0 and 1). */
const DEADLINE = 2;

/** The admission of one Swarm: its slot ledger, its queues (one per model) and their deadlines. */
export class Admission {
  readonly ledger: SlotLedger;
  private readonly queues = new Map<string, AdmissionQueue<Entry>>();
  private readonly deadlines = new IndexedHeap<Entry>((a, b) => (a.deadlineAt !== b.deadlineAt ? a.deadlineAt < b.deadlineAt : a.seq < b.seq), DEADLINE);
  private readonly queueSize: number;
  private readonly byDeadline: boolean;
  private readonly shares: ReadonlyMap<number, number>;
  private readonly window: number;
  private readonly timers: boolean;
  private share: number;
  private readonly headroom: number;
  private queued = 0;
  private seq = 0;
  private draining = false;
  private again = false;
  private soon = false;
  private timer: unknown;
  private timerAt = Infinity;
  private shape: CopyShape | undefined;

  /** @throws {SwarmError} `InvalidInput` for a bad `config.admission` */
  constructor(
    private readonly host: AdmissionHost,
    config: AdmissionConfig | undefined,
  ) {
    const issue = admissionConfigIssue(config);
    if (issue !== undefined) throw new SwarmError('InvalidInput', issue);
    this.ledger = new SlotLedger((id) => host.profileOf(id), host.remote === undefined ? undefined : (id) => host.remote?.(id) ?? 0);
    this.queueSize = config?.queueSize ?? 1024;
    this.byDeadline = config?.order === 'deadline';
    this.shares = new Map(Object.entries(config?.shares ?? {}).map(([k, v]) => [Number(k), v] as const));
    this.window = config?.window ?? 100;
    this.share = config?.share ?? 1;
    this.headroom = config?.headroom ?? 1;
    this.timers = isTimerClock(host.clock);
  }

  /** Waiters in every queue. */
  get size(): number {
    return this.queued;
  }

  /**
   * See `Swarm.admit`. Never throws: every refusal is the promise's rejection. With `fixed`, it
   * waits for room on that route alone (a session's resumed route: `hecate-swarm/sessions`).
   */
  admit(request: SwarmRequest = {}, options?: AdmitOptions, fixed?: Route): Promise<LeasedRoute> {
    try {
      return this.enter(request, options, fixed);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /**
   * The share of capacity this swarm admits, in (0, 1]: the hook a replica sets to 1/N of the
   * live orchestrators until reservations are shared (docs/replication.md).
   * @throws {SwarmError} `InvalidInput` for a share outside (0, 1]
   */
  setShare(share: number): void {
    if (!(typeof share === 'number' && share > 0 && share <= 1)) throw new SwarmError('InvalidInput', `admission share must be a number in (0, 1], got ${String(share)}`);
    const more = share > this.share;
    this.share = share;
    if (more) this.wake();
  }

  /** Counts a new lease (every lease the swarm issues, `route`'s included). */
  track(lease: Lease, route: Route): void {
    const shape = this.shape !== undefined && this.shape.stages === route.stages ? this.shape : this.ledger.shape(this.host.plan(), route.pipelineId, route.stages);
    this.ledger.track(lease, route, shape, this.host.clock.now());
  }

  /** A lease ended (released, expired): its slots are free, the queue is served in order. */
  ended(lease: Lease): void {
    if (this.ledger.end(lease.id, this.host.clock.now()) && this.queued > 0) this.wake();
  }

  /** A node left: its slots go with it. */
  dropNode(nodeId: string): void {
    this.ledger.dropNode(nodeId);
  }

  /** Serves the queue after the current step (a node revived or joined: the statechart is still taking the event). */
  wakeSoon(): void {
    if (this.queued === 0 || this.soon) return;
    this.soon = true;
    queueMicrotask(() => {
      this.soon = false;
      this.wake();
    });
  }

  /** Refuses every waiter: the swarm stopped. */
  close(): void {
    for (const q of this.queues.values()) {
      for (let w = q.next(); w !== undefined; w = q.next()) this.settle(w, q).reject(new SwarmError('Stopped', `admission of a request to model "${w.model}": the swarm was stopped while it waited`));
    }
  }

  /** See `Swarm.saturation`. */
  saturation(): Saturation {
    this.host.expire();
    const plan = this.host.plan();
    const nodes = this.host.nodes();
    let capacity: number | null = 0;
    let least = Infinity;
    const copies = plan.pipelines.map((p): CopySaturation => {
      const shape = this.ledger.shape(plan, p.id, p.stages);
      const intact = isIntact(p, nodes);
      const fill = this.ledger.fill(shape, this.headroom);
      if (intact) {
        capacity = capacity === null || shape.capacity === Infinity ? null : capacity + shape.capacity;
        least = Math.min(least, shape.capacity === Infinity ? 0 : fill);
      }
      return { pipelineId: p.id, modelId: p.modelId, intact, capacity: shape.capacity === Infinity ? null : shape.capacity, inFlight: this.ledger.inFlightOn(p.id), saturation: fill, room: intact && this.ledger.fits(shape, this.headroom) };
    });
    const budget = this.budget(capacity);
    const used = budget === Infinity ? 0 : this.ledger.size / budget;
    const bands = new Map<number, number>();
    for (const q of this.queues.values()) for (const b of q.depths()) bands.set(b.priority, (bands.get(b.priority) ?? 0) + b.queued);
    return {
      saturation: Math.min(1, Math.max(least === Infinity ? 1 : least, used)),
      saturated: !copies.some((c) => c.room) || this.ledger.size >= budget,
      capacity,
      share: this.share,
      inFlight: this.ledger.size,
      queued: this.queued,
      bands: [...bands].sort((a, b) => b[0] - a[0]).map(([priority, queued]) => ({ priority, queued })),
      copies,
    };
  }

  private enter(request: SwarmRequest, options: AdmitOptions | undefined, fixed: Route | undefined): Promise<LeasedRoute> {
    const o = checkAdmitOptions(options);
    const now = this.host.clock.now();
    // Waiters first: routing them after this request would overwrite the prompt its route defers to its lease.
    if (this.queued > 0) this.serve(now);
    const route = fixed ?? this.host.route(request); // checks the request, throws as route does
    if (o.signal?.aborted === true) throw aborted(route.modelId, o.signal);
    const queue = this.queues.get(route.modelId);
    const leased = queue === undefined || queue.size === 0 ? this.place(request, route, fixed !== undefined) : undefined;
    if (leased !== undefined) {
      (queue ?? this.queueOf(route.modelId)).admitted(o.priority);
      return Promise.resolve(leased);
    }
    const q = queue ?? this.queueOf(route.modelId);
    if (o.deadlineMs === 0) throw new RoutingError('DeadlineExceeded', `admission of a request to model "${route.modelId}": no copy has room and its deadline is now (deadlineMs 0)`);
    if (o.priority < 0 && !q.underShare(o.priority)) throw this.saturated(route.modelId, q, o.priority, `priority ${o.priority} is sheddable and every copy is full`);
    if (this.queued >= this.queueSize) {
      const victim = q.victimFor(o.priority);
      if (victim === undefined) throw this.saturated(route.modelId, q, o.priority, `the queue is full (${this.queueSize} waiting)`);
      this.settle(victim, q).reject(this.saturated(route.modelId, q, victim.priority, `pushed out of the full queue (${this.queueSize} waiting) by a request of priority ${o.priority}`));
    }
    return new Promise<LeasedRoute>((resolve, reject) => {
      const w: Entry = { at: [-1, -1, -1], seq: ++this.seq, priority: o.priority, deadlineAt: o.deadlineMs === undefined ? Infinity : now + o.deadlineMs, resumed: o.resumed, model: route.modelId, request, fixed, resolve, reject, signal: o.signal, onAbort: undefined };
      q.push(w);
      this.queued++;
      if (w.deadlineAt !== Infinity) {
        this.deadlines.push(w);
        this.arm(now);
      }
      if (w.signal !== undefined) {
        const signal = w.signal;
        w.onAbort = () => {
          if (q.remove(w)) this.settle(w, undefined).reject(aborted(w.model, signal));
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
    });
  }

  /**
   * Leases the router's choice for `request` when a copy has room (admission decides how many,
   * the router where: its cost counts the leases in flight), or undefined when none has room;
   * `only` leases `chosen` if it has room itself, or nothing.
   */
  private place(request: SwarmRequest, chosen?: Route, only = false): LeasedRoute | undefined {
    const plan = this.host.plan();
    if (this.share < 1 && this.ledger.size >= this.budget(this.intactCapacity(plan))) return undefined;
    const first = chosen ?? this.host.route(request);
    const shape = this.ledger.shape(plan, first.pipelineId, first.stages);
    if (this.ledger.fits(shape, this.headroom)) return this.take(first, shape, request);
    if (only) return undefined;
    const nodes = this.host.nodes();
    for (const p of plan.pipelines) {
      if (p.modelId === first.modelId && p.id !== first.pipelineId && isIntact(p, nodes) && this.ledger.fits(this.ledger.shape(plan, p.id, p.stages), this.headroom)) return this.take(first, shape, request);
    }
    return undefined;
  }

  private take(route: Route, shape: CopyShape, request: SwarmRequest): LeasedRoute {
    this.shape = shape;
    try {
      return this.host.lease(route, request);
    } finally {
      this.shape = undefined;
    }
  }

  /** Serves the queues in order while a copy has room; a wake during it runs once more after. */
  private wake(): void {
    if (this.queued === 0) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.serve(this.host.clock.now());
  }

  private serve(now: number): void {
    this.draining = true;
    try {
      do {
        this.again = false;
        this.sweep(now);
        for (const q of this.queues.values()) {
          while (q.size > 0) {
            const w = q.next() as Entry;
            let leased: LeasedRoute | undefined;
            try {
              leased = this.place(w.request, w.fixed, w.fixed !== undefined);
            } catch (error) {
              // No copy left at all (every one down): it waits for a revival, until its deadline.
              if (error instanceof RoutingError && (error.code === 'NoHealthyPipeline' || error.code === 'Unrecoverable')) break;
              this.settle(w, q).reject(error as Error);
              continue;
            }
            if (leased === undefined) break;
            q.admitted(w.priority);
            this.settle(w, q).resolve(leased);
          }
        }
      } while (this.again);
    } finally {
      this.draining = false;
    }
  }

  /** Refuses the waiters past their deadline, earliest first. */
  private sweep(now: number): void {
    for (let w = this.deadlines.peek(); w !== undefined && w.deadlineAt <= now; w = this.deadlines.peek()) {
      this.settle(w, this.queues.get(w.model)).reject(new RoutingError('DeadlineExceeded', `admission of a request to model "${w.model}" (priority ${w.priority}): no copy had room before its deadline`));
    }
  }

  /** Takes a waiter out of every structure; returns it, to be resolved or rejected. */
  private settle(w: Entry, q: AdmissionQueue<Entry> | undefined): Entry {
    q?.remove(w);
    this.deadlines.remove(w);
    this.queued--;
    if (w.onAbort !== undefined) w.signal?.removeEventListener('abort', w.onAbort);
    if (this.deadlines.size === 0 && this.timer !== undefined) {
      (this.host.clock as Clock).clearTimeout(this.timer);
      this.timer = undefined;
      this.timerAt = Infinity;
    }
    return w;
  }

  /** One clock timer, at the earliest deadline (armed again when it fires). */
  private arm(now: number): void {
    const next = this.deadlines.peek()?.deadlineAt ?? Infinity;
    if (!this.timers || next >= this.timerAt) return;
    const clock = this.host.clock as Clock;
    if (this.timer !== undefined) clock.clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = clock.setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      const t = clock.now();
      this.sweep(t);
      this.arm(t);
    }, Math.max(0, next - now));
  }

  private queueOf(model: string): AdmissionQueue<Entry> {
    let q = this.queues.get(model);
    if (q === undefined) this.queues.set(model, (q = new AdmissionQueue<Entry>(this.byDeadline, this.shares, this.window)));
    return q;
  }

  /** Σ capacity of the intact copies (null: one is unlimited). */
  private intactCapacity(plan: SwarmPlan): number | null {
    const nodes = this.host.nodes();
    let sum = 0;
    for (const p of plan.pipelines) {
      if (!isIntact(p, nodes)) continue;
      const c = this.ledger.shape(plan, p.id, p.stages).capacity;
      if (c === Infinity) return null;
      sum += c;
    }
    return sum;
  }

  /** Reservations this swarm may hold: its share of the capacity (at least 1), unbounded for an unlimited swarm. */
  private budget(capacity: number | null): number {
    return this.share === 1 || capacity === null ? Infinity : Math.max(1, Math.floor(this.share * capacity + 1e-9));
  }

  private saturated(model: string, q: AdmissionQueue<Entry>, priority: number, why: string): RoutingError {
    const hold = this.ledger.meanHoldMs ?? FIRST_HOLD_MS;
    const capacity = this.intactCapacity(this.host.plan()) ?? 1;
    const retryAfterMs = Math.max(1, Math.ceil((hold * (q.ahead(priority) + 1)) / Math.max(1, capacity * this.share)));
    return new RoutingError('Saturated', `admission of a request to model "${model}" refused: ${why}; retry after about ${retryAfterMs} ms`, { retryAfterMs });
  }
}

function aborted(model: string, signal: AbortSignal): RoutingError {
  return new RoutingError('Aborted', `admission of a request to model "${model}" aborted by its signal`, { cause: signal.reason });
}
