/**
 * Which format version a writer puts on the log (docs/replication.md, "Upgrades: format
 * versions"). The log's **floor** is the highest format version applied so far in it, the genesis
 * included: every replica derives it from log order alike, so it is the same everywhere. A writer
 * never writes below the floor (after the first signed entry, an unsigned one is skipped on every
 * replica that reads both), and goes above it only once it has heard the other replicas'
 * announcements for a whole liveness window and every live one announced it reads the higher
 * version: so a replica of the release before, which announces `reads: [1]`, never meets an entry
 * it cannot read while it is live, and an announcement it has not heard yet cannot be missed.
 */

/** What the writer knows when it writes. */
export interface WriteFormatInput {
  /** The versions this replica writes, oldest first. */
  readonly writes: readonly number[];
  /** The log's floor: the highest version applied so far (1 before anything was applied). */
  readonly floor: number;
  /** How long this replica has been hearing the others' announcements (ms, its io clock); 0 when not yet. */
  readonly heardForMs: number;
  /** The liveness window: a replica not heard for this long is not live (`replicaGraceMs`). */
  readonly windowMs: number;
  /** The versions each live replica announced it reads (this one's own included or not: it reads what it writes). */
  readonly liveReads: readonly (readonly number[])[];
  /**
   * Announcements last seen live, or withdrawn, a while ago (`agoMs`, this replica's io clock),
   * with the versions each read: a version one of them lacked is written only a whole window
   * after (a replica that went silent or was withdrawn by a stale view may still be live).
   */
  readonly recent?: readonly { readonly reads: readonly number[]; readonly agoMs: number }[];
}

/**
 * The format a writer uses: the floor (the least version it writes at or above it) until it has
 * heard announcements for `windowMs`; then the newest version it writes, at or above the floor,
 * that every live replica reads and no announcement lacked within the last `windowMs`
 * (`recent`); when none is, the floor (a replica behind it halts clearly on
 * the log anyway).
 */
export function writeFormat(input: WriteFormatInput): number {
  const { writes, floor, heardForMs, windowMs, liveReads, recent = [] } = input;
  const eligible = writes.filter((v) => v >= floor);
  // A floor above what this replica writes cannot happen (it would have halted reading the log): write its newest.
  const atFloor = eligible[0] ?? (writes[writes.length - 1] as number);
  if (heardForMs < windowMs) return atFloor;
  for (let i = eligible.length - 1; i >= 0; i--) {
    const v = eligible[i] as number;
    if (liveReads.every((reads) => reads.includes(v)) && recent.every((r) => r.agoMs >= windowMs || r.reads.includes(v))) return v;
  }
  return atFloor;
}
