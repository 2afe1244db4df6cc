/**
 * Applies a rebalance entry's move event to a replica's local Swarm (docs/rebalance.md "Replicas,
 * serve and agents"): the statechart takes it or refuses it (a rebalance under way, a copy not as
 * ordered, a move no longer pending), alike on every replica, since each applies the same entries
 * in the same order. A replica without the rebalancer applies them too.
 */
import { SwarmError } from '../core/errors.js';
import { kInternals } from '../runtime/internal.js';
import type { MoveEvent } from '../runtime/rebalance-hook.js';
import type { Swarm } from '../runtime/swarm.js';

/** Sends `event` to the Swarm statechart; the error when it was not taken, else undefined. */
export function applyMove(swarm: Swarm, event: MoveEvent): SwarmError | undefined {
  const internals = swarm[kInternals];
  try {
    internals.running();
  } catch (error) {
    return error as SwarmError;
  }
  const before = internals.actor.getSnapshot();
  internals.actor.send(event);
  if (internals.actor.getSnapshot() !== before) return undefined;
  const what = event.type === 'rebalance.begin' ? `a rebalance of ${event.moves.length} moves (${event.moves.map((m) => m.id).join(', ')})` : `${event.type} of move "${event.moveId}"`;
  return new SwarmError('InvalidInput', `the swarm refused ${what}: it does not fit the plan or no such move is pending`);
}
