/**
 * A member's lifecycle read from its two owners, the Swarm statechart's context and its node
 * actor: the one view of it (`swarm.node(id)`). A new node state is said here, once, in
 * {@link NODE_STATES} and {@link lifecycleOf}; what shows node states (an orchestrator's status,
 * its gauges) reads the list from here (docs/design.md §12).
 */
import { isNodeAlive, type DownCause } from '../../machines/node.machine.js';
import { downCauseOf, type NodeActorRef, type OwnMark, type SwarmContext } from '../../machines/swarm.machine.js';
import type { NodeProfile } from '../core/types.js';

/** Every state `swarm.node(id).state` can say, in the order views list them. */
export const NODE_STATES = Object.freeze(['alive', 'suspect', 'down'] as const);

/** A member's state: `alive`, `suspect` (alive, its detector in doubt) or `down`. */
export type NodeState = (typeof NODE_STATES)[number];

/** A node's lifecycle as the Swarm statechart and its node actor hold it (`swarm.node(id)`). */
export interface NodeLifecycle {
  readonly id: string;
  readonly profile: NodeProfile;
  readonly state: NodeState;
  /** Why it is down; absent while alive. */
  readonly cause?: DownCause;
  /** Failures in a row, ejections in a row, and whether it is on probation. */
  readonly failures: number;
  readonly ejections: number;
  readonly probation: boolean;
  /**
   * When its last heartbeat came (the swarm clock's ms), down or not; absent before the first
   * heartbeat of its node actor (a node removed and added again starts without one).
   */
  readonly heardAt?: number;
  /**
   * A mark its node actor made on its own that the swarm has not applied: a replica's Swarm
   * defers such marks to its owner, so until the owner applies it the two differ.
   */
  readonly pending?: OwnMark;
}

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
  const extra = { ...(health?.heardAt !== undefined ? { heardAt: health.heardAt } : {}), ...(pending !== undefined ? { pending } : {}) };
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
