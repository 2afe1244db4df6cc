/**
 * An agent as the orchestrator shows it (`GET /v1/status`, `hello`, the `hecate_nodes` gauge, a
 * join's and a heartbeat's answer), read when asked from the owners of its facts, never kept: the
 * Swarm and its node actors for a member (its state, why it is down, when it was last heard, its
 * card), the waiting room before the plan, the address book for where it listens and whether it
 * left (docs/serve.md, "An agent's state"). The states a member can be in are the runtime's list
 * (`NODE_STATES`): a new one shows here without a change.
 */
import { NODE_STATES, type NodeState } from '../runtime/node-lifecycle.js';
import type { AgentRecord, NodeRegistry } from './node-registry.js';
import type { SwarmSeat } from './swarm-seat.js';
import type { WaitingRoom } from './waiting-room.js';

/**
 * An agent's state: `absent` (declared, no agent joined), `pending` (joined, not in a swarm: none
 * yet, or a replica's log has not added it), `left`, or, a member, what the swarm says of it.
 */
export type AgentState = 'absent' | 'pending' | NodeState | 'left';

/** Every {@link AgentState}, in `/metrics` order. */
export const AGENT_STATES: readonly AgentState[] = Object.freeze(['absent', 'pending', ...NODE_STATES, 'left']);

/** The owners an agent's view reads. */
export interface AgentSources {
  readonly registry: NodeRegistry;
  readonly room: WaitingRoom;
  readonly seat: SwarmSeat;
}

/** One agent in `GET /v1/status`. */
export interface AgentView {
  readonly id: string;
  readonly url: string | null;
  readonly state: AgentState;
  readonly downCause: string | null;
  readonly memoryGb: number;
  readonly score: number | null;
  readonly joins: number;
  readonly heartbeats: number;
  readonly lastHeartbeatAgoMs: number | null;
  readonly inflight: number;
}

/** The state of `record`'s agent now. */
export function agentState(sources: AgentSources, record: AgentRecord): AgentState {
  if (record.left) return 'left';
  if (record.url === undefined) return 'absent';
  return sources.seat.lifecycle(record.id)?.state ?? 'pending';
}

/** The state of agent `id` now; `absent` for an id never heard of. */
export function stateOf(sources: AgentSources, id: string): AgentState {
  const record = sources.registry.get(id);
  return record === undefined ? 'absent' : agentState(sources, record);
}

/** Every agent as plain data, sorted by id. */
export function agentViews(sources: AgentSources, now: number): AgentView[] {
  const { registry, room, seat } = sources;
  return [...registry.all()]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((r) => {
      const node = seat.lifecycle(r.id);
      const state = agentState(sources, r);
      const profile = node?.profile ?? r.profile;
      const heardAt = node?.heardAt ?? room.heardAt(r.id) ?? r.heardBeforeLeaving;
      return {
        id: r.id,
        url: r.url ?? null,
        state,
        downCause: state === 'down' ? (node?.cause ?? null) : null,
        memoryGb: profile.memoryGb,
        score: profile.score ?? null,
        joins: r.joins,
        heartbeats: r.heartbeats,
        lastHeartbeatAgoMs: heardAt === undefined ? null : now - heardAt,
        inflight: r.inflight,
      };
    });
}

/** Agents by state now, every state present (0 when none). */
export function countByState(sources: AgentSources): Map<AgentState, number> {
  const counts = new Map<AgentState, number>(AGENT_STATES.map((s) => [s, 0]));
  for (const r of sources.registry.all()) {
    const state = agentState(sources, r);
    counts.set(state, (counts.get(state) ?? 0) + 1);
  }
  return counts;
}
