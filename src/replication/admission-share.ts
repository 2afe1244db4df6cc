/**
 * Several orchestrators admit together (docs/admission.md, "Several orchestrators"): until their
 * reservations are shared, each replica sees only its own leases, so each admits its share of the
 * capacity, 1 ÷ the live replicas on the progress board, and N replicas never admit N× the
 * capacity. Once reservations are shared (the load signal, docs/replication.md "Shared load"),
 * admission reads the merged view instead: the others' announced reservations fill the slots it
 * checks, and the share is 1. A share set in the swarm's config (`admission.share`) is kept as is.
 */
import { kInternals } from '../runtime/internal.js';
import type { Swarm } from '../runtime/swarm.js';

/** The share a replica of `liveReplicas` live ones admits. */
export function replicaShare(liveReplicas: number): number {
  return 1 / Math.max(1, Math.floor(liveReplicas));
}

/** Sets the local swarm's admission share from the live replicas (1 when it reads the shared load), unless its config fixes one. */
export function shareAdmission(swarm: Swarm, liveReplicas: number, sharedLoad = false): void {
  const internals = swarm[kInternals];
  if (internals.genesis[1].admission?.share !== undefined) return;
  internals.admission.setShare(sharedLoad ? 1 : replicaShare(liveReplicas));
}
