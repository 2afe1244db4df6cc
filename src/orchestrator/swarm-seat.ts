/**
 * The orchestrator's swarm, once it has one: the one Swarm contract it reads and commands through
 * (a local Swarm, or a replica whose lifecycle commands commit through the log), and the local
 * Swarm its sessions run on. Before there is one, reads say so and commands answer 503 `NoSwarm`.
 */
import type { Swarm } from '../runtime/swarm.js';
import type { CommitMode, NodeLifecycle, SwarmContract } from '../runtime/swarm-contract.js';
import type { Replica } from './replica.js';
import { ServeError } from '../wire/serve-error.js';

/** Where the orchestrator's swarm sits. */
export class SwarmSeat {
  private contract: SwarmContract<CommitMode> | undefined;
  private sessions: (() => Swarm) | undefined;
  private replicated: Replica | undefined;

  /** The swarm, or undefined before it is planned. */
  get swarm(): SwarmContract<CommitMode> | undefined {
    return this.contract;
  }

  /** The replica, when this orchestrator is one of several on a replicated swarm. */
  get replica(): Replica | undefined {
    return this.replicated;
  }

  /** The swarm. @throws {ServeError} 503 `NoSwarm` before it is planned */
  require(): SwarmContract<CommitMode> {
    if (this.contract === undefined) throw new ServeError('NoSwarm', 503, 'no swarm yet: the joined agents cannot hold every copy');
    return this.contract;
  }

  /** The local Swarm sessions run on, or undefined before it is planned. */
  local(): Swarm | undefined {
    return this.sessions?.();
  }

  /** A member's lifecycle as the swarm says it now (undefined: no swarm, or not a member). */
  readonly lifecycle = (nodeId: string): NodeLifecycle | undefined => this.contract?.node(nodeId);

  /** Takes a local Swarm. */
  seatLocal(swarm: Swarm): void {
    this.contract = swarm;
    this.sessions = () => swarm;
  }

  /** Takes a replica's swarm. */
  seatReplica(replica: Replica): void {
    this.replicated = replica;
    this.contract = replica.swarm;
    this.sessions = () => replica.local();
  }
}
