import { createHash } from 'node:crypto';
import { aliveMembers } from '../../machines/swarm-context.js';
import type { Swarm } from '../runtime/swarm.js';

/**
 * A stable hash (SHA-256, hex) of what the log decides: the plan, the status and every member's
 * liveness in join order. Two replicas that applied the same entries have the same digest;
 * telemetry, leases and other local observations are not in it.
 */
export function swarmDigest(swarm: Swarm): string {
  const context = swarm.actor.getSnapshot().context;
  const liveness = [...aliveMembers(context)].map(([id, alive]) => (alive ? id : `!${id}`));
  return createHash('sha256').update(JSON.stringify({ plan: context.plan, status: swarm.status(), liveness })).digest('hex');
}
