/**
 * The Swarm's events, out to the metrics and `GET /v1/events`. The Swarm statechart is the one
 * writer of a node's lifecycle: these events only count it and tell it, with the connection's
 * timing the registry keeps (how long the node had been silent). A suspect heard from again (the
 * Swarm's `node.cleared`) goes out as `node.trusted`; plan changes go out from the join and leave
 * paths, which know the URL and how an agent left.
 */
import type { SwarmEmitted } from '../runtime/index.js';
import type { CommitMode, SwarmContract } from '../runtime/swarm-contract.js';
import type { AgentRecord } from './node-registry.js';
import type { OrchestratorParts } from './orchestrator-parts.js';

/** Relays `swarm`'s events; returns the unsubscribe. */
export function relaySwarmEvents(parts: OrchestratorParts, swarm: SwarmContract<CommitMode>): () => void {
  const { clock, registry, events, metrics } = parts;
  /** When each node now suspect was suspected: the time `node.trusted` reports, not a state. */
  const suspectedAt = new Map<string, number>();
  return swarm.on('*', (event: SwarmEmitted) => {
    const at = clock.now();
    switch (event.type) {
      case 'status.changed':
        events.publish(event.type, { at, status: event.status });
        return;
      case 'node.suspected': {
        metrics.detection.inc({ event: event.type, cause: 'detector' });
        suspectedAt.set(event.nodeId, at);
        events.publish(event.type, { at, nodeId: event.nodeId, silentMs: silence(registry.get(event.nodeId), at) });
        return;
      }
      case 'node.cleared': {
        const since = suspectedAt.get(event.nodeId);
        suspectedAt.delete(event.nodeId);
        events.publish('node.trusted', { at, nodeId: event.nodeId, suspectedForMs: since === undefined ? null : at - since, silentMs: endedSilence(registry.get(event.nodeId), at) });
        return;
      }
      case 'node.down':
        suspectedAt.delete(event.nodeId);
        metrics.detection.inc({ event: event.type, cause: event.cause });
        events.publish(event.type, { at, nodeId: event.nodeId, cause: event.cause, silentMs: silence(registry.get(event.nodeId), at), rescue: event.rescue });
        return;
      case 'node.alive':
        suspectedAt.delete(event.nodeId);
        metrics.detection.inc({ event: event.type, cause: event.cause });
        events.publish(event.type, { at, nodeId: event.nodeId, cause: event.cause });
        return;
      case 'node.left':
        suspectedAt.delete(event.nodeId);
        return;
      // node.joined: told by the join path (with the URL); node.mark: a replica's own mark the log has not applied (docs/replication.md).
      case 'node.joined':
      case 'node.mark':
        return;
    }
  });
}

function silence(record: AgentRecord | undefined, at: number): number | null {
  return record?.lastHeartbeatAt === undefined ? null : at - record.lastHeartbeatAt;
}

/**
 * The silence a heartbeat ended: `node.cleared` comes with the beat, either before the registry
 * notes it (alone) or after (replicated, the beat comes back through NATS on two paths).
 */
function endedSilence(record: AgentRecord | undefined, at: number): number | null {
  if (record?.lastHeartbeatAt === undefined) return null;
  if (record.lastHeartbeatAt === at) return record.lastGapMs ?? null;
  return at - record.lastHeartbeatAt;
}
