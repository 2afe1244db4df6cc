/**
 * How the orchestrator comes to have its swarm: planned at start over declared nodes (each down
 * until its agent joins), joined through a replicated log (`--nats`), or planned once the agents
 * waiting for one can hold every copy, when the waiting room hands them over (docs/serve.md).
 */
import { PlanError } from '../core/errors.js';
import type { NodeProfile } from '../core/types.js';
import { createSwarm } from '../runtime/index.js';
import type { Swarm } from '../runtime/swarm.js';
import type { RebalancerPlugin } from '../runtime/rebalance-hook.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import type { Replica, ReplicaOptions } from './replica.js';
import { ServeError } from '../wire/serve-error.js';
import { relaySwarmEvents } from './swarm-events.js';

/** Where the swarm comes from: declared nodes, and (with them) the replicated log to join. */
export interface SwarmOrigin {
  readonly nodes?: readonly NodeProfile[];
  readonly replication?: ReplicationOrigin;
}

/** The replicated log to join: NATS servers, the swarm's name, NATS credentials and TLS, the swarm secret. */
export type ReplicationOrigin = Pick<ReplicaOptions, 'servers' | 'swarm' | 'nats' | 'secret'>;

/** Seats the swarm the origin gives now, if any; without declared nodes it waits for {@link planWhenReady}. */
export async function openSwarm(parts: OrchestratorParts, origin: SwarmOrigin): Promise<void> {
  const { nodes, replication } = origin;
  if (replication !== undefined) {
    if (nodes === undefined || nodes.length === 0) throw new ServeError('InvalidRequest', 400, 'a replicated orchestrator needs declared nodes (a topology): every orchestrator of a swarm plans over the same ones', { field: 'nodes' });
    await joinReplicated(parts, nodes, replication);
  } else if (nodes !== undefined && nodes.length > 0) {
    // Declared nodes: planned now, down until their agent joins (before any listener: not events).
    const created = createSwarm(nodes, parts.config, { clock: parts.clock, prefixCache: parts.precise.plugin, ...rebalancing(parts) });
    for (const profile of nodes) {
      parts.registry.declare(profile);
      created.markDown(profile.id);
    }
    seatLocal(parts, created);
  }
}

/** Without declared nodes: plans the swarm once the agents waiting for one can hold every copy, and hands them over. */
export function planWhenReady(parts: OrchestratorParts): void {
  const { room, seat, config, clock, events, log } = parts;
  if (seat.swarm !== undefined) return;
  const waiting = room.profiles();
  let created: Swarm;
  try {
    created = createSwarm(waiting, config, { clock, prefixCache: parts.precise.plugin, ...rebalancing(parts) });
  } catch (error) {
    if (error instanceof PlanError && error.code === 'InsufficientCapacity') return;
    throw error;
  }
  seatLocal(parts, created);
  room.handOver(created);
  log(`planned the swarm over ${waiting.length} agents: ${created.state().plan.pipelines.map((p) => `${p.id} [${p.stages.map((s) => s.nodeId).join(' → ')}]`).join(', ')}`);
  events.publish('swarm.planned', { at: clock.now(), plan: created.state().plan, status: created.status() });
}

/** `serve --rebalance`: the swarm's rebalancer option, if any. */
function rebalancing(parts: OrchestratorParts): { rebalancer?: RebalancerPlugin } {
  return parts.rebalancer !== undefined ? { rebalancer: parts.rebalancer } : {};
}

function seatLocal(parts: OrchestratorParts, swarm: Swarm): void {
  parts.seat.seatLocal(swarm);
  relaySwarmEvents(parts, swarm);
}

async function joinReplicated(parts: OrchestratorParts, nodes: readonly NodeProfile[], replication: ReplicationOrigin): Promise<void> {
  const { registry, seat, clock, events, log } = parts;
  const { startReplica } = await import('./replica.js');
  const replica: Replica = await startReplica({
    ...replication,
    nodes,
    config: parts.config,
    clock,
    ...rebalancing(parts),
    prefixCache: parts.precise.plugin,
    kvShare: parts.kv,
    onRejected: rejectionLog(log),
    // The directory is the swarm's shared address book: an address written, or withdrawn (it left).
    // Its last heartbeat is its node's; kept if the node is gone by the time the withdrawal comes.
    onAgent: (id, entry) => {
      if (entry === undefined) registry.withdraw(id, seat.swarm?.node(id)?.heardAt ?? registry.get(id)?.heardBeforeLeaving);
      else registry.addressed(entry.profile, entry.url);
    },
  });
  for (const profile of nodes) registry.declare(profile);
  seat.seatReplica(replica);
  relaySwarmEvents(parts, replica.swarm);
  replica.onReplication((status, applied) => events.publish('replication.changed', { at: clock.now(), status, applied }));
  // Declared nodes no agent has joined yet are down until one does, as alone. Proposed by every
  // orchestrator that starts (a duplicate down is a no-op); one that lands after the agent
  // joined elsewhere is undone by its next heartbeat (agent-routes.ts).
  for (const profile of nodes) {
    const node = replica.swarm.node(profile.id);
    if (registry.get(profile.id)?.url === undefined && node !== undefined && node.state !== 'down') {
      await replica.swarm.markDown(profile.id).catch((error: unknown) => log(`declared node "${profile.id}" not marked down: ${String(error)}`));
    }
  }
}

/** Logs dropped forgeries: the first 10, then one in 100 (a flood of them must not flood the log). */
function rejectionLog(log: (line: string) => void): (why: string) => void {
  let count = 0;
  return (why) => {
    count++;
    if (count <= 10 || count % 100 === 0) log(`replication: dropped a log entry not signed with the swarm secret (${count} so far): ${why}`);
  };
}
