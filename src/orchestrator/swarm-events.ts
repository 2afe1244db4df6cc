/**
 * The Swarm's events, out to the metrics and `GET /v1/events`. The Swarm statechart is the one
 * writer of a node's lifecycle and its node actor of when it was last heard: these events only
 * count it and tell it, with the silence read from the node (`swarm.node(id).heardAt`). A suspect
 * heard from again (the Swarm's `node.cleared`) goes out as `node.trusted`, with the silence it
 * ended: the one the node was in when suspected (no heartbeat came since, or it would have been
 * cleared then). Plan changes go out from the join and leave paths, which know the URL and how an
 * agent left.
 */
import type { SwarmEmitted } from '../runtime/index.js';
import type { CommitMode, SwarmContract } from '../runtime/swarm-contract.js';
import type { OrchestratorParts } from './orchestrator-parts.js';

/** A node now suspect: when it was suspected, and when it was last heard then. */
interface Suspicion {
  readonly at: number;
  readonly heardAt: number | undefined;
}

/** Relays `swarm`'s events; returns the unsubscribe. */
export function relaySwarmEvents(parts: OrchestratorParts, swarm: SwarmContract<CommitMode>): () => void {
  const { clock, events, metrics } = parts;
  /** The nodes now suspect: what `node.trusted` reports, not a state. */
  const suspected = new Map<string, Suspicion>();
  const heardAt = (nodeId: string) => swarm.node(nodeId)?.heardAt;
  return swarm.on('*', (event: SwarmEmitted) => {
    // Closing, the orchestrator closes its events first: the Swarm's last events as it stops (a
    // closed replica's nodes can no longer be read) are told to no one.
    if (events.isClosed) return;
    const at = clock.now();
    switch (event.type) {
      case 'status.changed':
        events.publish(event.type, { at, status: event.status });
        return;
      case 'node.suspected': {
        metrics.detection.inc({ event: event.type, cause: 'detector' });
        const suspicion = { at, heardAt: heardAt(event.nodeId) };
        suspected.set(event.nodeId, suspicion);
        events.publish(event.type, { at, nodeId: event.nodeId, silentMs: silence(suspicion.heardAt, at) });
        return;
      }
      case 'node.cleared': {
        const suspicion = suspected.get(event.nodeId);
        suspected.delete(event.nodeId);
        events.publish('node.trusted', { at, nodeId: event.nodeId, suspectedForMs: suspicion === undefined ? null : at - suspicion.at, silentMs: silence(suspicion?.heardAt, at) });
        return;
      }
      case 'node.down':
        suspected.delete(event.nodeId);
        metrics.detection.inc({ event: event.type, cause: event.cause });
        events.publish(event.type, { at, nodeId: event.nodeId, cause: event.cause, silentMs: silence(heardAt(event.nodeId), at), rescue: event.rescue });
        return;
      case 'node.alive':
        suspected.delete(event.nodeId);
        metrics.detection.inc({ event: event.type, cause: event.cause });
        events.publish(event.type, { at, nodeId: event.nodeId, cause: event.cause });
        return;
      case 'node.left':
        suspected.delete(event.nodeId);
        return;
      // A rebalance's moves (`serve --rebalance`, docs/rebalance.md): begun, formed (the plan adopted), done, aborted.
      case 'moves.begun':
        events.publish(event.type, { at, moveIds: event.moveIds, plan: event.plan });
        return;
      case 'copy.formed':
        events.publish(event.type, { at, moveId: event.moveId, plan: event.plan });
        return;
      case 'move.done':
        events.publish(event.type, { at, moveId: event.moveId });
        return;
      case 'move.aborted':
        events.publish(event.type, { at, moveId: event.moveId, reason: event.reason });
        return;
      // node.joined: told by the join path (with the URL); node.mark: a replica's own mark the log has not applied (docs/replication.md).
      case 'node.joined':
      case 'node.mark':
        return;
    }
  });
}

/** The silence since `heardAt` (null before any heartbeat). */
function silence(heardAt: number | undefined, at: number): number | null {
  return heardAt === undefined ? null : at - heardAt;
}
