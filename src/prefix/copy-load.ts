/**
 * What the prefix router knows of each copy's load (docs/prefix-cache.md, "The guard"): the work
 * its open leases carry (their uncached prompt tokens plus {@link REQUEST_TOKENS} each), and its
 * effective concurrency, the requests it serves at once: its nodes' declared `slots` when every
 * node declares them; else what its engines report ({@link CopyLoad.engineLoad}, the hook for an
 * upstream that publishes running and waiting counts); else what the router learns from the
 * latencies released on it, the in-flight count at which latency starts to rise.
 */

/** What one request costs a copy beyond its uncached prompt, in prefill tokens: its answer's decode (128 tokens out decode in about the time 138 prompt tokens prefill, TensorRT-LLM's figures in docs/prefix-cache.md). */
export const REQUEST_TOKENS = 128;
/** Latency rises when it passes this many times the latency at the lowest in-flight count observed. */
export const RISE = 1.5;
/** A bucket counts once it has this many observations. */
const MIN_SAMPLES = 3;
/** In-flight counts are learnt up to this; a copy serving more at once counts as this many. */
export const MAX_LEARNT = 64;
const ALPHA = 0.2;

/**
 * The latencies one copy released, per in-flight count at their reservation, each divided by its
 * request's work (a cached request is quick whatever the load), and the concurrency they show.
 */
export class ConcurrencyLearner {
  private readonly latency = new Float64Array(MAX_LEARNT + 1);
  private readonly count = new Uint32Array(MAX_LEARNT + 1);
  /** The estimate: 1 until latencies say more. */
  concurrency = 1;

  /** A request reserved with `inflight` on the copy (itself included) took `latencyMs` per unit of its work. */
  observe(inflight: number, latencyMs: number): void {
    const b = Math.max(1, Math.min(MAX_LEARNT, Math.round(inflight)));
    const n = this.count[b] as number;
    this.latency[b] = n === 0 ? latencyMs : (this.latency[b] as number) + ALPHA * (latencyMs - (this.latency[b] as number));
    this.count[b] = n + 1;
    this.concurrency = this.estimate();
  }

  /**
   * The highest in-flight count up to which every observed level's latency stays within
   * {@link RISE} × the latency of a request alone; 1 until a request alone was observed (a copy
   * never seen idle shows queueing at every level, not where it starts).
   */
  private estimate(): number {
    if ((this.count[1] as number) < MIN_SAMPLES) return 1;
    const base = this.latency[1] as number;
    let k = 1;
    for (let b = 2; b <= MAX_LEARNT; b++) {
      if ((this.count[b] as number) < MIN_SAMPLES) continue;
      if ((this.latency[b] as number) <= RISE * base) k = b;
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

  /** A lease ended (released, or gone unreleased); a latency teaches the copy's concurrency. */
  closed(note: LoadNote, latencyMs: number | undefined): void {
    const w = (this.work.get(note.copyId) ?? 0) - note.work;
    if (w > 1e-9) this.work.set(note.copyId, w);
    else this.work.delete(note.copyId);
    if (note.adding) {
      const a = (this.adders.get(note.copyId) ?? 0) - 1;
      if (a > 0) this.adders.set(note.copyId, a);
      else this.adders.delete(note.copyId);
    }
    if (latencyMs === undefined || note.work <= 0) return;
    let l = this.learners.get(note.copyId);
    if (l === undefined) this.learners.set(note.copyId, (l = new ConcurrencyLearner()));
    l.observe(note.inflight, latencyMs / note.work);
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

  /** What the copy's latencies show (1 before any). */
  learnt(copyId: string): number {
    return this.learners.get(copyId)?.concurrency ?? 1;
  }
}
