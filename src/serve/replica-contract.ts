/**
 * A replicated swarm as the one Swarm contract in its `log` mode: reads, routing and events from
 * the replica's local Swarm, lifecycle commands and heartbeats through the log and the heartbeat
 * subject. A proposal that cannot reach the log (cut off from NATS, or closed) becomes a 503 the
 * agent moves on from (docs/serve.md, "Several orchestrators").
 */
import type { SwarmEmitted } from '../runtime/index.js';
import type { ReplicatedSwarm } from '../replication/replicated-swarm.js';
import { ReplicationError } from '../replication/replication-error.js';
import type { Swarm } from '../runtime/swarm.js';
import type { LifecycleCommand, LifecycleResult } from '../runtime/swarm-contract.js';
import { kCommit, kLocal, SwarmFront } from '../runtime/swarm-front.js';
import { ServeError } from './serve-error.js';

/** A {@link ReplicatedSwarm} behind the {@link SwarmFront} base: one commit hook, every read once. */
class ReplicaContract extends SwarmFront<'log'> {
  constructor(private readonly rs: ReplicatedSwarm) {
    super();
  }

  protected [kLocal](): Swarm {
    // Read each time: the replica replaces its local Swarm when it restores a snapshot.
    return this.rs.swarmReplica;
  }

  protected [kCommit]<C extends LifecycleCommand>(command: C): Promise<LifecycleResult<C>> {
    return viaLog(this.rs.name, () => this.propose(command)) as Promise<LifecycleResult<C>>;
  }

  /** To every orchestrator's detector, through the heartbeat subject (this one's too, when it comes back). */
  override heartbeat(nodeId: string): void {
    this.rs.heartbeat(nodeId);
  }

  /** The replica's listeners outlive a restore of its local Swarm: listen there, not on the local Swarm. */
  override on<T extends SwarmEmitted['type'] | '*'>(type: T, handler: (event: T extends '*' ? SwarmEmitted : Extract<SwarmEmitted, { type: T }>) => void): () => void {
    return (this.rs.on as (type: string, handler: (event: never) => void) => () => void)(type, handler as (event: never) => void);
  }

  private propose(command: LifecycleCommand): Promise<unknown> {
    switch (command.type) {
      case 'node.added':
        return this.rs.addNode(command.profile);
      case 'node.removed':
        return this.rs.removeNode(command.nodeId);
      case 'node.down':
        return this.rs.markDown(command.nodeId);
      case 'node.alive':
        return this.rs.markAlive(command.nodeId);
    }
  }
}

async function viaLog<T>(swarm: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ReplicationError && (error.code === 'Disconnected' || error.code === 'Closed')) {
      throw new ServeError('Disconnected', 503, `this orchestrator cannot reach the log of swarm "${swarm}": ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/** The replicated swarm `rs` as a `SwarmContract<'log'>`. */
export function replicaContract(rs: ReplicatedSwarm): SwarmFront<'log'> {
  return new ReplicaContract(rs);
}
