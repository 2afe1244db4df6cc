/**
 * What the snapshot a swarm's bucket holds now is, as a trim and a save must know it during an
 * upgrade (docs/replication.md, "Upgrades: format versions"): its log sequence, whether it carries
 * a signature (a replica with the swarm secret saved it), and whether that signature verifies with
 * this replica's secret (a replica restarted with the secret can start from it only then).
 */
import type { KV } from '@nats-io/kv';
import type { LogSigner } from './log-signer.js';

/** The bucket's snapshot, described. */
export interface HeldSnapshot {
  /** Its log sequence (0 when it has none). */
  readonly seq: number;
  /** Whether it carries a signature. */
  readonly signed: boolean;
  /** Whether the signature verifies with this replica's secret (false without one). */
  readonly verifies: boolean;
}

/** Describes a snapshot's value (not one: sequence 0, unsigned). */
export function describeHeld(value: unknown, signer?: LogSigner): HeldSnapshot {
  if (value === null || typeof value !== 'object') return { seq: 0, signed: false, verifies: false };
  const { seq, sig } = value as { seq?: unknown; sig?: unknown };
  return { seq: typeof seq === 'number' ? seq : 0, signed: sig !== undefined, verifies: signer !== undefined && signer.verify('snapshot', value) };
}

/** The snapshot the bucket holds now, described; undefined when there is none. */
export async function readHeld(kv: KV, signer?: LogSigner): Promise<HeldSnapshot | undefined> {
  const entry = await kv.get('snapshot');
  if (entry === null || entry.operation !== 'PUT' || entry.length === 0) return undefined;
  try {
    return describeHeld(entry.json<unknown>(), signer);
  } catch {
    return { seq: 0, signed: false, verifies: false };
  }
}
