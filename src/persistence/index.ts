/**
 * `hecate-swarm/persistence`: a swarm's lifecycle state as plain JSON and back, its digest, and
 * lifecycle events applied in their wire form (docs/persistence.md). What a replicated swarm
 * (`hecate-swarm/replication`) is built on; usable alone, e.g. to warm-start from a file.
 * @packageDocumentation
 */
export { persistSwarm, restoreSwarm, swarmDigest, applyEvent } from './persist-swarm.js';
export type { LifecycleEvent, PersistedSwarm, PersistedMember, PersistedOutcome } from './persisted.js';
