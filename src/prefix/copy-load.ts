/**
 * What the prefix router knows of each copy's load (docs/prefix-cache.md, "The guard"): the work
 * its open leases carry (their uncached prompt tokens plus {@link REQUEST_TOKENS} each), and its
 * effective concurrency, the requests it serves at once: its nodes' declared `slots` when every
 * node declares them; else what its engines report ({@link CopyLoad.engineLoad}, the hook for an
 * upstream that publishes running and waiting counts); else what the router learns from the
 * latencies released on it, the in-flight count at which latency starts to rise; else unknown
 * (the guard then moves a request off the cache's copy only to a copy with nothing in flight).
 */

/** What one request costs a copy beyond its uncached prompt, in prefill tokens: its answer's decode (128 tokens out decode in about the time 138 prompt tokens prefill, TensorRT-LLM's figures in docs/prefix-cache.md). */
export const REQUEST_TOKENS = 128;
/** Latency rises when it passes this many times the fastest latency observed. */
export const RISE = 1.5;
/** A bucket counts once it has this many observations. */
const MIN_SAMPLES = 3;
/** In-flight counts are learnt up to this; a copy serving more at once counts as this many. */
export const MAX_LEARNT = 64;
const ALPHA = 0.2;

/**
 * The latencies one copy released, per in-flight count at their reservation, each divided by its
 * request's work as the copy's report showed it (a cached request is quick whatever the load), and
 * the concurrency they show.
 */
export class ConcurrencyLearner {
  private readonly latency = new Float64Array(MAX_LEARNT + 1);
  private readonly count = new Uint32Array(MAX_LEARNT + 1);
  /** The estimate; undefined until latencies show one. */
  concurrency: number | undefined;
  /** The fastest latency per unit of work any request showed. */
  private fastest = Infinity;

  /** A request reserved with `inflight` on the copy (itself included) took `latencyMs` per unit of its work. */
  observe(inflight: number, latencyMs: number): void {
    const b = Math.max(1, Math.min(MAX_LEARNT, Math.round(inflight)));
    const n = this.count[b] as number;
    this.latency[b] = n === 0 ? latencyMs : (this.latency[b] as number) + ALPHA * (latencyMs - (this.latency[b] as number));
    this.count[b] = n + 1;
    this.fastest = Math.min(this.fastest, latencyMs);
    this.concurrency = this.estimate();
  }

  /**
   * The highest in-flight count up to which every level observed {@link MIN_SAMPLES} times stays
   * within {@link RISE} × the fastest latency any request showed (one that did not queue: its
   * service time); undefined while no level does (a copy never seen unqueued shows queueing at
   * every level, not where it starts).
   */
  private estimate(): number | undefined {
    let k: number | undefined;
    for (let b = 1; b <= MAX_LEARNT; b++) {
      if ((this.count[b] as number) < MIN_SAMPLES) continue;
      if ((this.latency[b] as number) <= RISE * this.fastest) k = b;
      else break;
    }
    return k;
  }
}

/** One open lease's share of its copy's load. */
export interface LoadNote {
  readonly copyId: string;
  readonly work: number;
  readonly inflight: number;
  /** It brings the copy blocks it did not hold. */
  readonly adding: boolean;
  /**
   * A lease bringing new blocks was open on the copy when it opened: what it was estimated to
   * find may still be on its way in (a prefill not done), so finding less is no sign of eviction.
   */
  readonly behind: boolean;
}

/** The load side of every copy: open work, learnt and reported concurrency. */
export class CopyLoad {
  private readonly work = new Map<string, number>();
  private readonly learners = new Map<string, ConcurrencyLearner>();
  private readonly engines = new Map<string, number>();
  /** Open leases per copy that bring it new blocks. */
  private readonly adders = new Map<string, number>();

  /** Open work on a copy, in prefill tokens (never below 0). */
  workOf(copyId: string): number {
    return Math.max(0, this.work.get(copyId) ?? 0);
  }

  /** A lease opened on a copy with `work` tokens (`adding`: some of them new blocks); `inflight` its in-flight count with it. */
  opened(copyId: string, work: number, inflight: number, adding: boolean): LoadNote {
    this.work.set(copyId, (this.work.get(copyId) ?? 0) + work);
    const open = this.adders.get(copyId) ?? 0;
    if (adding) this.adders.set(copyId, open + 1);
    return { copyId, work, inflight, adding, behind: open > 0 };
  }

  /**
   * A lease ended (released, or gone unreleased); a latency teaches the copy's concurrency, per
   * unit of `done`, the work the request turned out to be (its note's estimate unless given).
   */
  closed(note: LoadNote, latencyMs: number | undefined, done = note.work): void {
    const w = (this.work.get(note.copyId) ?? 0) - note.work;
    if (w > 1e-9) this.work.set(note.copyId, w);
    else this.work.delete(note.copyId);
    if (note.adding) {
      const a = (this.adders.get(note.copyId) ?? 0) - 1;
      if (a > 0) this.adders.set(note.copyId, a);
      else this.adders.delete(note.copyId);
    }
    if (latencyMs === undefined || done <= 0) return;
    let l = this.learners.get(note.copyId);
    if (l === undefined) this.learners.set(note.copyId, (l = new ConcurrencyLearner()));
    l.observe(note.inflight, latencyMs / done);
  }

  /** The copy holds nothing in flight: whatever work its notes left (leases that expired unreleased) is dropped. */
  idle(copyId: string): void {
    this.work.delete(copyId);
    this.adders.delete(copyId);
  }

  /**
   * The hook for an engine that publishes its load (vLLM's `num_requests_running` and
   * `num_requests_waiting`, SGLang's and TensorRT-LLM's equivalents): requests waiting while
   * `running` run means it serves `running` at once; none waiting means at least `running`.
   */
  engineLoad(nodeId: string, running: number, waiting: number): void {
    if (!Number.isFinite(running) || !Number.isFinite(waiting) || running < 0 || waiting < 0) return;
    const r = Math.max(1, Math.floor(running));
    const known = this.engines.get(nodeId);
    this.engines.set(nodeId, waiting > 0 ? r : Math.max(r, known ?? 1));
  }

  /** A node's concurrency as its engine reported it, if it did. */
  engineOf(nodeId: string): number | undefined {
    return this.engines.get(nodeId);
  }

  /** What the copy's latencies show, if they show it yet. */
  learnt(copyId: string): number | undefined {
    return this.learners.get(copyId)?.concurrency;
  }

  /**
   * A copy's effective concurrency: its `slots` (the fewest its nodes declare, if all do), else
   * its engines' report (the fewest, if every node reported), else what its latencies show; undefined when nothing does.
   */
  concurrency(copy: { readonly id: string; readonly stages: readonly { readonly nodeId: string }[] }, slots: number | undefined): number | undefined {
    if (slots !== undefined) return slots;
    let k = Infinity;
    for (const s of copy.stages) k = Math.min(k, this.engines.get(s.nodeId) ?? NaN);
    return Number.isNaN(k) || k === Infinity ? this.learnt(copy.id) : k;
  }
}

/**
 * The concurrencies the guard weighs the cache's copy and the load copy at: each its own; a copy
 * whose concurrency is unknown counts as the other's; when neither is known, 1 each if the load
 * copy has nothing in flight (the one copy sure to start the request now), else undefined: the
 * request stays with the cache.
 */
export function guardConcurrency(cached: number | undefined, byLoad: number | undefined, byLoadInflight: number): readonly [number, number] | undefined {
  if (cached === undefined && byLoad === undefined) return byLoadInflight > 0 ? undefined : [1, 1];
  return [cached ?? (byLoad as number), byLoad ?? (cached as number)];
}
