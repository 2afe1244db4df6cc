/** A member's lifecycle read from its two owners: the Swarm statechart's context and its node actor. */
import { isNodeAlive, type DownCause } from '../../machines/node.machine.js';
import { downCauseOf, type NodeActorRef, type OwnMark, type SwarmContext } from '../../machines/swarm.machine.js';
import type { NodeLifecycle } from './swarm-contract.js';

/** A member's {@link NodeLifecycle}, or undefined for a stranger. */
export function lifecycleOf(context: SwarmContext, nodeId: string, ref: NodeActorRef | undefined): NodeLifecycle | undefined {
  const m = context.members.get(nodeId);
  if (m === undefined) return undefined;
  const cause = downCauseOf(context, nodeId);
  const node = ref?.getSnapshot();
  const health = node?.context.health;
  const failures = health?.failures ?? 0;
  const ejections = health?.ejections ?? 0;
  const probation = health?.probation ?? false;
  const pending = node === undefined ? undefined : pendingMark(nodeId, cause, node);
  const extra = pending !== undefined ? { pending } : {};
  if (cause !== undefined) return { id: nodeId, profile: m.profile, state: 'down', cause, failures, ejections, probation, ...extra };
  return { id: nodeId, profile: m.profile, state: node?.value === 'suspect' ? 'suspect' : 'alive', failures, ejections, probation, ...extra };
}

/** The own mark the node actor's state says and the Swarm's liveness does not (yet). */
function pendingMark(nodeId: string, cause: DownCause | undefined, node: ReturnType<NodeActorRef['getSnapshot']>): OwnMark | undefined {
  if (cause === undefined) return node.matches({ down: 'detected' }) ? { type: 'node.down', nodeId, cause: 'detector' } : node.matches({ down: 'ejected' }) ? { type: 'node.eject', nodeId } : undefined;
  if (!isNodeAlive(node)) return undefined;
  if (cause === 'detector') return { type: 'node.alive', nodeId, cause: 'heartbeat' };
  if (cause === 'ejected') return { type: 'node.alive', nodeId, cause: 'probation' };
  return undefined;
}
