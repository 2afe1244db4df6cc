/**
 * `hecate-swarm/replication`: several orchestrators, one swarm. Every membership and lifecycle
 * event goes through the swarm's NATS JetStream stream and every replica applies them in stream
 * order, so all reach the same plan, ids, rescues and status; heartbeats go over a core NATS
 * subject to every replica's detector; routing, leases and telemetry stay each replica's own, and
 * each replica's reservations in flight are announced on another core subject and priced by the
 * others (docs/replication.md, "Shared load"). Needs the optional peers `@nats-io/transport-node`,
 * `@nats-io/jetstream` and `@nats-io/kv`.
 * @packageDocumentation
 */
export { connectSwarm } from './connect-swarm.js';
export { ReplicatedSwarm } from './replicated-swarm.js';
export type { ConnectSwarmOptions } from './connect-options.js';
export type { NatsAccess } from './nats-access.js';
export type { ReplicationEmitted, ReplicationStats, ReplicationStatus } from './replication-events.js';
export { ReplicationError } from './replication-error.js';
export type { ReplicationErrorCode } from './replication-error.js';
export type { LogEntry } from './log-entry.js';
export type { OwnMark } from '../../machines/swarm-context.js';
