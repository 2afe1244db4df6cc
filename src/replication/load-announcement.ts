/**
 * The wire form of a replica's load announcement on the core NATS subject `hecate.<swarm>.load`
 * (docs/replication.md, "Shared load"): one function encodes, one decodes, so a signature (the
 * swarm secret's) can wrap exactly these two.
 */

/** One replica's announcement: its whole in-flight state now, not a change. */
export interface LoadAnnouncement {
  /** Format version. */
  readonly v: 1;
  /** The announcing replica's id. */
  readonly replica: string;
  /** Its incarnation (a random name per process start): a restarted replica counts `seq` from 1 again. */
  readonly epoch: string;
  /** Its announcements so far in this incarnation: a receiver keeps the highest it heard. */
  readonly seq: number;
  /**
   * How long a receiver counts this announcement without hearing another from the replica, ms
   * (0: forget it now, the replica left). The replica announces again well within it while it
   * holds anything, so its reservations outlive it by at most this long.
   */
  readonly holdMs: number;
  /** Its open reservations per node (nodes with none left out). */
  readonly inflight: Readonly<Record<string, number>>;
  /** Other signals riding the same message, by part name (see `LoadPart`): e.g. a prefix index's inserts. */
  readonly parts?: Readonly<Record<string, unknown>>;
}

/** The longest `holdMs` a receiver accepts (a longer one is cut to it). */
export const MAX_HOLD_MS = 60_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The bytes published for `a` (JSON). */
export function encodeAnnouncement(a: LoadAnnouncement): Uint8Array {
  return encoder.encode(JSON.stringify(a));
}

/**
 * The announcement in `data`, or undefined when it is not one this release reads (not JSON, a
 * version it does not know, a field of the wrong type, a count that is not a positive integer):
 * such a message is dropped, never half applied.
 */
export function decodeAnnouncement(data: Uint8Array): LoadAnnouncement | undefined {
  let a: unknown;
  try {
    a = JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
  if (a === null || typeof a !== 'object') return undefined;
  const { v, replica, epoch, seq, holdMs, inflight, parts } = a as Record<string, unknown>;
  if (v !== 1 || typeof replica !== 'string' || replica === '' || typeof epoch !== 'string' || !Number.isSafeInteger(seq) || (seq as number) < 1) return undefined;
  if (typeof holdMs !== 'number' || !Number.isFinite(holdMs) || holdMs < 0) return undefined;
  if (inflight === null || typeof inflight !== 'object' || Array.isArray(inflight)) return undefined;
  const counts: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const [nodeId, n] of Object.entries(inflight)) {
    if (!Number.isSafeInteger(n) || (n as number) < 1) return undefined;
    counts[nodeId] = n as number;
  }
  if (parts !== undefined && (parts === null || typeof parts !== 'object' || Array.isArray(parts))) return undefined;
  return { v, replica, epoch, seq: seq as number, holdMs: Math.min(holdMs, MAX_HOLD_MS), inflight: counts, ...(parts !== undefined ? { parts: parts as Record<string, unknown> } : {}) };
}
