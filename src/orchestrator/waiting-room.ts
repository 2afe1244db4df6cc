/**
 * The agents that joined before there is a Swarm (no topology declared them): the one owner of
 * that membership and of their heartbeat times, until the joined agents can hold every copy. Then
 * the Swarm is planned over them and the room hands them over: each heartbeats into its node
 * actor, which owns its time from then on, and the room closes (docs/serve.md, "An agent's state").
 */
import type { NodeProfile } from '../core/types.js';
import type { CommitMode, SwarmContract } from '../runtime/swarm-contract.js';
import { ServeError } from '../wire/serve-error.js';

/** One waiting agent: the card it joined with, and when it was last heard (the orchestrator's clock). */
interface Waiting {
  profile: NodeProfile;
  heardAt: number;
}

/** The pre-plan membership. */
export class WaitingRoom {
  private readonly waiting = new Map<string, Waiting>();
  private closed = false;

  /**
   * `profile.id` joined (or joined again) at `at`: it waits, with the card it joined with last.
   * @throws {ServeError} 500 `Internal` once the room handed over: a join then goes to the Swarm
   */
  enter(profile: NodeProfile, at: number): void {
    if (this.closed) throw new ServeError('Internal', 500, `agent "${profile.id}" joined the waiting room after it handed over to the swarm`);
    this.waiting.set(profile.id, { profile, heardAt: at });
  }

  /** A heartbeat of `id` at `at`, if it waits. */
  heard(id: string, at: number): void {
    const w = this.waiting.get(id);
    if (w !== undefined) w.heardAt = at;
  }

  /** `id` no longer waits: it left, or was forgotten. */
  leave(id: string): void {
    this.waiting.delete(id);
  }

  /** When `id`, waiting, was last heard; undefined when it does not wait. */
  heardAt(id: string): number | undefined {
    return this.waiting.get(id)?.heardAt;
  }

  /** The cards of the waiting agents, in the order they joined: what the Swarm is planned over. */
  profiles(): NodeProfile[] {
    return [...this.waiting.values()].map((w) => w.profile);
  }

  /** How many wait. */
  get size(): number {
    return this.waiting.size;
  }

  /**
   * Hands every waiting agent to `swarm`, planned over {@link profiles}: each heartbeats into its
   * node actor (its detector starts; its time is the node's from now), and the room closes.
   */
  handOver(swarm: SwarmContract<CommitMode>): void {
    this.closed = true;
    for (const id of this.waiting.keys()) swarm.heartbeat(id);
    this.waiting.clear();
  }
}
