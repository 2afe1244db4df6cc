/**
 * The runtime's read view of the Swarm: what `route` reads without an actor message (the
 * telemetry table and its routing index), the node actors by id, and who waits on a node going
 * down. Node lifecycle facts enter it through one path only, {@link SwarmView.follow}: the
 * statechart's emitted transitions. Nothing else writes a node's liveness, suspicion or
 * membership here, so the view cannot disagree with the machine (docs/design.md, "One owner").
 */
import type { Actor } from 'xstate';
import type { NodeActorRef, provideSwarm } from '../../machines/swarm.machine.js';
import { nodeKey } from '../../machines/swarm.machine.js';
import type { NodeProfile, SwarmPlan } from '../core/types.js';
import type { LeaseTable } from './lease-table.js';
import type { PrefixHook } from './prefix-hook.js';
import { NodeWatchers } from './node-watchers.js';
import { ReleaseSampler } from './release-sampler.js';
import { SUSPECTED, TelemetryTable } from './telemetry-table.js';

/** The Swarm actor as the view follows it: its emitted events and its system. */
type Followed = Pick<Actor<ReturnType<typeof provideSwarm>>, 'on' | 'system'>;

export class SwarmView {
  readonly table: TelemetryTable;
  readonly sampler: ReleaseSampler;
  /** Running session stage calls waiting on a node going down (pushed, not polled). */
  readonly downWatchers = new NodeWatchers();
  /** Nodes whose failure detection has started (at their first heartbeat). */
  readonly watched = new Set<string>();
  /** Each member's node actor, found once per join (a report looks it up by id). */
  private readonly refs = new Map<string, NodeActorRef>();
  private system: Followed['system'] | undefined;
  /** The prefix-cache hook: a copy loses its entries when a node of it goes down or leaves (docs/prefix-cache.md). */
  prefix: Pick<PrefixHook, 'nodeLost' | 'adopt'> | undefined;

  constructor(
    plan: SwarmPlan,
    profiles: readonly NodeProfile[],
    down: Iterable<string>,
    releaseSampleMs: number,
    private readonly leases: LeaseTable,
  ) {
    this.table = new TelemetryTable(plan, profiles);
    for (const id of down) this.table.setAlive(id, false);
    this.sampler = new ReleaseSampler(releaseSampleMs);
  }

  /**
   * The one path: every lifecycle transition the statechart emits updates the view, before any
   * handler added later (the orchestrator's, a user's) sees the event.
   */
  follow(actor: Followed): void {
    this.system = actor.system;
    const on = actor.on.bind(actor);
    on('node.down', (e) => {
      this.table.setAlive(e.nodeId, false);
      this.sampler.forget(e.nodeId); // what it served before dying says nothing of it when back
      this.downWatchers.notify(e.nodeId); // whatever the cause: the session calls on it re-route now
      this.prefix?.nodeLost(e.nodeId);
    });
    on('node.alive', (e) => this.table.setAlive(e.nodeId, true));
    on('node.suspected', (e) => this.table.doubt(e.nodeId, SUSPECTED, true));
    on('node.cleared', (e) => this.table.doubt(e.nodeId, SUSPECTED, false));
    on('node.joined', (e) => {
      this.table.join(e.profile);
      this.table.adopt(e.plan);
      this.prefix?.adopt(e.plan);
    });
    // A rebalance's plan changes: a move's copies formed (routable now), a break-first move's old copies left.
    for (const type of ['moves.begun', 'copy.formed'] as const) {
      on(type, (e) => {
        this.table.adopt(e.plan);
        this.prefix?.adopt(e.plan);
      });
    }
    on('node.left', (e) => {
      this.leases.dropNode(e.nodeId);
      this.watched.delete(e.nodeId);
      this.refs.delete(e.nodeId);
      this.table.leave(e.nodeId);
      this.sampler.forget(e.nodeId);
      this.table.adopt(e.plan);
      this.prefix?.nodeLost(e.nodeId);
      this.prefix?.adopt(e.plan);
      this.downWatchers.notify(e.nodeId); // a call on a node that left the swarm will never answer
    });
  }

  /** A member's node actor (undefined for a stranger). */
  ref(nodeId: string): NodeActorRef | undefined {
    let ref = this.refs.get(nodeId);
    if (ref === undefined && typeof nodeId === 'string' && this.table.get(nodeId) !== undefined) {
      ref = this.system?.get(nodeKey(nodeId)) as NodeActorRef | undefined;
      if (ref !== undefined) this.refs.set(nodeId, ref);
    }
    return ref;
  }
}
