/**
 * How the orchestrator changes who is in the swarm. Alone, it calls its Swarm; one of several
 * orchestrators on a replicated swarm (`--nats`), it proposes the change to the log and it takes
 * effect when the log delivers it, on every orchestrator alike (docs/serve.md).
 */
import type { NodeProfile } from '../core/types.js';
import type { Swarm } from '../runtime/swarm.js';
import { ServeError } from './serve-error.js';

/** The orchestrator's lifecycle calls; each resolves once the change is applied here. */
export interface Membership {
  /** Adds a node; resolves with the role the telomerase gave it. @throws what `Swarm.addNode` throws */
  addNode(profile: NodeProfile): Promise<string>;
  /** @throws {PlanError} when the plan cannot do without it (no room to relocate its layers) */
  removeNode(nodeId: string): Promise<void>;
  markDown(nodeId: string): Promise<void>;
  markAlive(nodeId: string): Promise<void>;
  /** A heartbeat of a node in the swarm: to the local detector, or (replicated) to every orchestrator's. */
  heartbeat(nodeId: string): void;
}

/** The lifecycle calls of an orchestrator alone: straight on its Swarm, once it has one. */
export function localMembership(swarm: () => Swarm | undefined): Membership {
  const get = (): Swarm => {
    const s = swarm();
    if (s === undefined) throw new ServeError('NoSwarm', 503, 'no swarm yet: the joined agents cannot hold every copy');
    return s;
  };
  return {
    addNode: async (profile) => get().addNode(profile).role,
    removeNode: async (nodeId) => {
      get().removeNode(nodeId);
    },
    markDown: async (nodeId) => {
      get().markDown(nodeId);
    },
    markAlive: async (nodeId) => {
      get().markAlive(nodeId);
    },
    heartbeat: (nodeId) => {
      get().heartbeat(nodeId);
    },
  };
}
