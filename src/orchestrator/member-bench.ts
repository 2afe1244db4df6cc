/**
 * Calls, not beats, decide a member's usefulness (docs/security.md, "Membership"). A member whose
 * stage calls go unanswered — no reply within the call's budget, or no HTTP reply at all — is
 * benched: marked down by the orchestrator, so neither its heartbeats nor a rejoin bring it back.
 * A member on trial (it has answered no call since it joined or was readmitted) is benched at its
 * first unanswered call; a proven one at `misses` in a row.
 *
 * A benched member is readmitted only by a probe the orchestrator sends it (`GET /v1/health`,
 * answered with its own id) and only when one of its heartbeats or joins comes after its
 * back-off: none at its first benching (a restarted agent is back at its first heartbeat), then
 * `backoffMs · 2^(n−2)` for the n-th benching or failed probe in a row, capped at `maxBackoffMs`.
 * Readmitted, it is on trial again; its first answered call clears its record. At most
 * `maxProbes` probes run at once. Nothing here costs a client: the probes are the orchestrator's.
 */
import type { OrchestratorParts } from './orchestrator-parts.js';

/** What a stage call's end says of its agent. */
export type CallVerdict = 'answered' | 'unanswered' | 'other';

/** What the stage runners tell of each call's end. */
export interface CallOutcomes {
  called(nodeId: string, verdict: CallVerdict): void;
}

/** Settings of the bench. */
export interface BenchOptions {
  /** Unanswered calls in a row that bench a proven member (`--eject-after`). @defaultValue 5 */
  readonly misses?: number;
  /** The back-off after a second benching or failed probe in a row, doubling after. @defaultValue 15000 */
  readonly backoffMs?: number;
  /** @defaultValue 300000 */
  readonly maxBackoffMs?: number;
  /** A probe's budget. @defaultValue 5000 */
  readonly probeTimeoutMs?: number;
  /** Probes at once. @defaultValue 8 */
  readonly maxProbes?: number;
  /** Resolves true when the agent at `url` answered as `id`. */
  readonly probe: (url: string, id: string, signal: AbortSignal) => Promise<boolean>;
}

/** One member's record: on trial or proven, its misses in a row, whether benched and until when. */
interface Standing {
  proven: boolean;
  misses: number;
  benched: boolean;
  /** Benchings and failed probes in a row. */
  strikes: number;
  retryAt: number;
  probing: boolean;
}

/** The orchestrator's bench of members that do not answer. */
export class MemberBench implements CallOutcomes {
  private readonly standings = new Map<string, Standing>();
  private probes = 0;
  private closed = false;
  private readonly o: Required<BenchOptions>;

  constructor(
    private readonly parts: OrchestratorParts,
    options: BenchOptions,
  ) {
    this.o = { misses: 5, backoffMs: 15_000, maxBackoffMs: 300_000, probeTimeoutMs: 5000, maxProbes: 8, ...options };
  }

  /** A stage call to `nodeId` ended. */
  called(nodeId: string, verdict: CallVerdict): void {
    if (verdict === 'other' || this.closed || this.parts.registry.get(nodeId) === undefined) return;
    const s = this.standing(nodeId);
    if (s.benched) {
      // Sent before it was benched, or revived by another orchestrator's word (a replica's heartbeat route): down again.
      if (verdict === 'unanswered') void this.markDown(nodeId);
      return;
    }
    if (verdict === 'answered') {
      s.misses = 0;
      if (!s.proven) {
        s.proven = true;
        s.strikes = 0;
      }
      return;
    }
    s.misses++;
    if (!s.proven || s.misses >= this.o.misses) void this.bench(nodeId, s);
  }

  /** Whether `id` is benched: its heartbeats and joins do not revive it. */
  holds(id: string): boolean {
    return this.standings.get(id)?.benched === true;
  }

  /**
   * A heartbeat or a join of benched `id`: it stays down (a leave and a join put it back in the
   * plan alive: down again), and is probed when past its back-off.
   */
  async keepOut(id: string): Promise<void> {
    await this.markDown(id);
    this.heard(id);
  }

  /** A heartbeat or a join of `id`: a benched member past its back-off is probed. */
  heard(id: string): void {
    const s = this.standings.get(id);
    if (s === undefined || !s.benched || s.probing || this.closed) return;
    if (this.parts.clock.now() < s.retryAt || this.probes >= this.o.maxProbes) return;
    const url = this.parts.registry.get(id)?.url;
    if (url === undefined) return;
    s.probing = true;
    this.probes++;
    void this.probe(id, url, s);
  }

  /** Forgets `id` (it was removed or forgotten): if it joins again, it is on trial. */
  forget(id: string): void {
    this.standings.delete(id);
  }

  /** Members benched now. */
  get benched(): number {
    let n = 0;
    for (const s of this.standings.values()) if (s.benched) n++;
    return n;
  }

  close(): void {
    this.closed = true;
  }

  private standing(id: string): Standing {
    let s = this.standings.get(id);
    if (s === undefined) this.standings.set(id, (s = { proven: false, misses: 0, benched: false, strikes: 0, retryAt: 0, probing: false }));
    return s;
  }

  /** The back-off after the n-th strike in a row: 0, then backoffMs doubling, capped. */
  private backoff(strikes: number): number {
    return strikes <= 1 ? 0 : Math.min(this.o.backoffMs * 2 ** Math.min(strikes - 2, 30), this.o.maxBackoffMs);
  }

  private strike(s: Standing): void {
    s.strikes++;
    s.retryAt = this.parts.clock.now() + this.backoff(s.strikes);
  }

  private async bench(id: string, s: Standing): Promise<void> {
    s.benched = true;
    s.misses = 0;
    this.strike(s);
    this.parts.metrics.bench.inc({ event: 'benched' });
    this.parts.log(`agent "${id}" benched: ${s.proven ? `${this.o.misses} stage calls in a row` : 'a stage call on trial'} went unanswered (strike ${s.strikes})`);
    await this.markDown(id);
  }

  /** Marks `id` down by the orchestrator's word, unless it is already (or quarantined). */
  private async markDown(id: string): Promise<void> {
    const swarm = this.parts.seat.swarm;
    const node = swarm?.node(id);
    if (swarm === undefined || node === undefined || (node.state === 'down' && (node.cause === 'manual' || node.cause === 'integrity'))) return;
    try {
      await swarm.markDown(id);
    } catch (error) {
      this.parts.log(`agent "${id}" not marked down: ${String(error)}`);
    }
  }

  private async probe(id: string, url: string, s: Standing): Promise<void> {
    const budget = new AbortController();
    const timer = this.parts.clock.setTimeout(() => budget.abort(), this.o.probeTimeoutMs);
    let answered = false;
    try {
      answered = await this.o.probe(url, id, budget.signal);
    } catch {
      answered = false;
    } finally {
      this.parts.clock.clearTimeout(timer);
      this.probes--;
      s.probing = false;
    }
    if (this.closed || this.standings.get(id) !== s || !s.benched) return;
    if (!answered) {
      this.strike(s);
      this.parts.metrics.bench.inc({ event: 'probe_failed' });
      this.parts.log(`agent "${id}" stays benched: its probe at ${url} went unanswered (next after ${Math.max(0, s.retryAt - this.parts.clock.now())} ms)`);
      return;
    }
    s.benched = false;
    s.proven = false; // on trial: its first unanswered call benches it again, a longer back-off after
    this.parts.metrics.bench.inc({ event: 'readmitted' });
    this.parts.log(`agent "${id}" readmitted on trial: it answered a probe`);
    const swarm = this.parts.seat.swarm;
    const node = swarm?.node(id);
    if (swarm === undefined || node?.state !== 'down' || node.cause === 'integrity') return;
    try {
      await swarm.markAlive(id);
    } catch (error) {
      this.parts.log(`agent "${id}" not marked alive: ${String(error)}`);
    }
  }
}

/**
 * The bench's probe over `get` (the orchestrator's poster, unsigned: `/v1/health` is public): `GET /v1/health` answered 200
 * with the member's own id.
 */
export function healthProbe(get: (url: string, signal: AbortSignal) => Promise<{ ok: boolean; json(): Promise<unknown> }>): BenchOptions['probe'] {
  return async (url, id, signal) => {
    const reply = await get(`${url}/v1/health`, signal);
    if (!reply.ok) return false;
    const body = (await reply.json()) as { id?: unknown } | null;
    return body?.id === id;
  };
}
