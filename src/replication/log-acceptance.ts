/**
 * Which log entries a replica with the swarm secret applies (docs/replication.md, "Signed
 * entries"): from format version 2 on, only entries whose `sig` verifies, signed (`at`, the
 * writer's wall clock) within {@link ENTRY_SKEW_MS} of the time the stream stored them, and whose id
 * was not applied in the last {@link REPLAY_WINDOW_MS} of stream time. Format 1 entries are a log
 * written before the swarm had a secret: every one is applied, whatever its `sig` or `at` (as a
 * replica without the secret applies it), until the log's first signed version-2 entry (the seal),
 * and every one is refused after it. Every check reads only the log (the stream's stored time, not this
 * replica's clock), so every replica accepts the same entries; the seal and the window are in the
 * snapshot.
 */
import { isRecordLike } from '../core/describe.js';
import type { LogSigner } from './log-signer.js';

/** How far an entry's signing time may be from the time the stream stored it. */
export const ENTRY_SKEW_MS = 30_000;
/** How long (stream time) an applied entry's id is remembered: past it, its stored time is outside the skew of any copy. */
export const REPLAY_WINDOW_MS = 2 * ENTRY_SKEW_MS;

/** The acceptance state, as a snapshot holds it. */
export interface AcceptanceState {
  /** Whether a signed entry was applied (unsigned ones are refused from then on). */
  readonly sealed: boolean;
  /** Entry ids applied within the replay window, with the stream time each was stored at. */
  readonly recent: readonly (readonly [string, number])[];
  /** The highest format version of a signed entry applied (the log's floor, write-format.ts); absent in a save before version 3: 2 if sealed. */
  readonly top?: number;
}

/**
 * The verdict on one entry: accepted, or refused (`verified`: its signature was good, so it is its
 * proposer's, refused for its time; `outdated`: unsigned, after the log's first signed entry).
 */
export type Acceptance = { readonly ok: true } | { readonly ok: false; readonly why: string; readonly verified: boolean; readonly outdated?: true };

const OK: Acceptance = { ok: true };

/** One replica's acceptance of log entries (the slot queue is "admission": docs/admission.md). */
export class LogAcceptance {
  sealed = false;
  /** The highest format version of a signed entry accepted (1 before any). */
  top = 1;
  private readonly recent = new Map<string, number>();
  private latest = 0;

  constructor(private readonly signer: LogSigner) {}

  /**
   * Whether to apply the entry `value` (parsed JSON, not yet checked further) at `seq`, stored at
   * `storedAt` (ms since the epoch, the stream's time).
   */
  accept(value: unknown, seq: number, storedAt: number): Acceptance {
    const v = isRecordLike(value) ? value['v'] : undefined;
    // Version 1 is taken as the release before takes it, whatever its `sig` or `at` (no writer signs
    // one): a replica without the secret applies it, so every replica must, until the seal.
    if (v === 1) {
      return this.sealed ? { ok: false, why: `log entry ${seq} is not signed (format version 1) and the log is signed since an earlier entry`, verified: false, outdated: true } : OK;
    }
    if (!this.signer.verify('entry', value)) return { ok: false, why: `log entry ${seq} is not signed with the swarm secret`, verified: false };
    const { at, id } = value as { at?: unknown; id?: unknown };
    if (typeof at !== 'number' || !Number.isFinite(at) || Math.abs(storedAt - at) > ENTRY_SKEW_MS) {
      return { ok: false, why: `log entry ${seq} was signed at ${String(at)} and stored at ${storedAt}: more than ${ENTRY_SKEW_MS} ms apart (a replay, or a writer's clock off)`, verified: true };
    }
    if (typeof id === 'string' && this.recent.has(id)) return { ok: false, why: `log entry ${seq} repeats entry "${id}", applied already (a replay)`, verified: true };
    if (typeof id === 'string') this.remember(id, storedAt);
    this.sealed = true;
    this.top = Math.max(this.top, v as number);
    return OK;
  }

  /** Whether `value` is a version-2 entry signed with the swarm secret (its time and id not checked). */
  signed(value: unknown): boolean {
    return isRecordLike(value) && typeof value['v'] === 'number' && value['v'] >= 2 && this.signer.verify('entry', value);
  }

  /** The state to snapshot. */
  save(): AcceptanceState {
    return { sealed: this.sealed, recent: [...this.recent], top: this.top };
  }

  /** Takes a snapshot's state. */
  restore(state: Partial<AcceptanceState> | undefined): void {
    this.sealed = state?.sealed === true;
    this.top = Number.isInteger(state?.top) ? (state?.top as number) : this.sealed ? 2 : 1;
    this.recent.clear();
    for (const [id, at] of Array.isArray(state?.recent) ? state.recent : []) this.remember(id, at);
  }

  private remember(id: string, storedAt: number): void {
    this.recent.set(id, storedAt);
    this.latest = Math.max(this.latest, storedAt);
    // In stream order, so the oldest are first.
    for (const [old, at] of this.recent) {
      if (at >= this.latest - REPLAY_WINDOW_MS) break;
      this.recent.delete(old);
    }
  }
}
