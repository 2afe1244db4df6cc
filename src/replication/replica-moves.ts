/**
 * A replica's rebalancing (docs/rebalance.md "Replicas, serve and agents"): the rebalancer
 * plug-in attached to the local Swarm with its move events going through the log (entries
 * `swarm.rebalance`, format version 3), so every replica applies one decision, and its loads and
 * drains carried out by the replica that decided. A copy drains once no request of this replica
 * runs on it and no other replica reserves any of its nodes (the shared load signal).
 */
import type { MoveEvent, Rebalance, RebalancerHook, RebalancerPlugin } from '../runtime/rebalance-hook.js';
import type { Swarm } from '../runtime/swarm.js';
import { ReplicationError } from './replication-error.js';

/** What the replica gives its moves. */
export interface ReplicaMovesHost {
  /** `connectSwarm`'s `rebalancer`, if any. */
  readonly plugin: RebalancerPlugin | undefined;
  /** The start of this replica's move ids (its proposals' prefix: unique among replicas and restarts). */
  readonly movePrefix: string;
  /** Who this is, for messages. */
  readonly who: string;
  /** Whether the replica signs (rebalance entries are version 3: signed). */
  readonly signed: boolean;
  /** Proposes a move event on the log; resolves once applied here, rejects if refused. */
  propose(event: MoveEvent): Promise<unknown>;
  /** Whether another replica reserves any of `nodes` now. */
  othersRunOn(nodes: ReadonlySet<string>): boolean;
}

/** The rebalancer of one replica's local Swarm. */
export class ReplicaMoves {
  private hook: RebalancerHook | undefined;
  private begun: Promise<unknown> | undefined;

  constructor(private readonly host: ReplicaMovesHost) {}

  /** The plug-in the local Swarm is built with (each build attaches it again): undefined without a rebalancer. */
  plugin(): RebalancerPlugin | undefined {
    const { plugin, movePrefix } = this.host;
    if (plugin === undefined) return undefined;
    return Object.freeze({
      kind: 'rebalancer' as const,
      attach: (host: Parameters<RebalancerPlugin['attach']>[0]) => {
        this.hook = plugin.attach({
          ...host,
          movePrefix,
          runsOn: (modelId, nodes) => host.runsOn(modelId, nodes) || this.host.othersRunOn(nodes),
          commit: (event) => {
            const applied = this.host.propose(event);
            if (event.type === 'rebalance.begin') this.begun = applied;
            return applied;
          },
        });
        return this.hook;
      },
    });
  }

  /**
   * Decides on the local Swarm and proposes the decision; resolves once applied here (as on
   * every replica), with what was decided.
   * @throws {ReplicationError} `InvalidInput` without a rebalancer or the swarm secret; the proposal's errors (`Refused` while a replica of the release before may be live)
   */
  async rebalance(local: Swarm, options?: unknown): Promise<Rebalance> {
    if (this.hook === undefined) throw new ReplicationError('InvalidInput', `${this.host.who} has no rebalancer: connectSwarm({ …, rebalancer: rebalancer() }), rebalancer from hecate-swarm/rebalance`);
    if (!this.host.signed) throw new ReplicationError('InvalidInput', `${this.host.who} has no swarm secret: rebalance entries are signed (format version 3; option "secret")`);
    this.begun = undefined;
    const decided = local.rebalance(options);
    const begun = this.begun as Promise<unknown> | undefined;
    if (begun !== undefined) await begun;
    return decided;
  }
}
