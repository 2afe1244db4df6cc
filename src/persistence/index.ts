/**
 * `hecate-swarm/persistence`: a swarm's state saved as plain JSON (XState's own persisted snapshot
 * through the snapshot codec) and restored, its lifecycle digest, and lifecycle events applied in
 * their wire form (docs/persistence.md). What a replicated swarm (`hecate-swarm/replication`) is
 * built on; usable alone, e.g. to warm-start from a file.
 * @packageDocumentation
 */
export { persistSwarm, restoreSwarm, swarmDigest, applyEvent } from './persist-swarm.js';
export { encodeSnapshot, decodeSnapshot } from './snapshot-codec.js';
export type { Encoded } from './snapshot-codec.js';
export type { LifecycleEvent, PersistedSwarm, LegacyPersistedSwarm, PersistedMember, PersistedOutcome } from './persisted.js';
