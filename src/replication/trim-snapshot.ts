/**
 * The snapshot a trim may cut the log up to (docs/replication.md, "Upgrades: format versions"):
 * never past one every replica, a replica restarted with the swarm secret included, can start from.
 */
import type { HeldSnapshot } from './held-snapshot.js';

/** What the trim knows of the snapshots. */
export interface TrimSnapshotInput {
  /** The latest snapshot stored, as this replica counts them (its own, and the announced ones it trusts). */
  readonly announced: number;
  /** Whether this replica has the swarm secret. */
  readonly secret: boolean;
  /** Without the secret: whether a replica with it (an announcement carrying a signature) was live within the last window. */
  readonly secretAround: boolean;
  /** The snapshot the bucket holds now (undefined: none, or not looked at). */
  readonly held: HeldSnapshot | undefined;
}

/**
 * The sequence of the snapshot the trim may reach (0: no trim). With the secret, the one the
 * bucket holds now if it verifies (its own may have been overwritten since by a replica without
 * the secret); without, the announced one, except while a replica with the secret is around: then
 * no further than the bucket's snapshot if it is signed, and no trim at all if it is not.
 */
export function trimSnapshot(input: TrimSnapshotInput): number {
  const { announced, secret, secretAround, held } = input;
  if (secret) return held?.verifies === true ? held.seq : 0;
  if (!secretAround) return announced;
  return held?.signed === true ? Math.min(announced, held.seq) : 0;
}
