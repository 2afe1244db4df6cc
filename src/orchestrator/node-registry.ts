/**
 * What the orchestrator knows of each agent's connection: its URL, whether it has joined (or left,
 * or joined before any swarm existed), joins, heartbeats and their timing, and the stage calls it
 * has in flight. Whether it is alive, suspect or down is the Swarm's to say (`swarm.node(id)`): the
 * registry never writes it, and every view joins the two here (docs/serve.md, "Agents").
 */
import type { NodeProfile } from '../core/types.js';
import type { NodeLifecycle } from '../runtime/swarm-contract.js';

/**
 * An agent's connection: `absent` (declared, never joined), `pending` (joined before there is a
 * swarm to be in), `joined`, or `left` (it left, or another orchestrator saw it leave).
 */
export type Presence = 'absent' | 'pending' | 'joined' | 'left';

/** An agent's state as the orchestrator shows it: its presence, or while joined its lifecycle in the swarm. */
export type AgentState = Exclude<Presence, 'joined'> | NodeLifecycle['state'];

/** Every {@link AgentState} (the `satisfies` makes a new lifecycle state a compile error until it is listed), in `/metrics` order. */
export const AGENT_STATES = Object.freeze(Object.keys({ absent: 0, pending: 0, alive: 0, suspect: 0, down: 0, left: 0 } satisfies Record<AgentState, 0>)) as readonly AgentState[];

/** A member's lifecycle as the swarm says it now; undefined for a node it does not have (or no swarm yet). */
export type LifecycleReader = (nodeId: string) => NodeLifecycle | undefined;

/** One agent's connection facts. */
export interface AgentRecord {
  readonly id: string;
  profile: NodeProfile;
  /** Where its stage server listens; undefined until it joins. */
  url: string | undefined;
  presence: Presence;
  joins: number;
  heartbeats: number;
  lastHeartbeatAt: number | undefined;
  /** The silence the last heartbeat ended (ms since the one before it); undefined before a second one. */
  lastGapMs: number | undefined;
  /** Stage calls to it running now. */
  inflight: number;
}

/** The plain view of a record in `GET /v1/status`. */
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

/**
 * An agent's state: its presence unless it has joined; joined, its lifecycle in the swarm (one that
 * joined a swarm which does not have it yet shows `pending`).
 */
export function agentState(record: AgentRecord, lifecycle: NodeLifecycle | undefined): AgentState {
  if (record.presence !== 'joined') return record.presence;
  return lifecycle?.state ?? 'pending';
}

/** Every agent the orchestrator has heard of, by id. */
export class NodeRegistry {
  private readonly records = new Map<string, AgentRecord>();

  /** The record of `id`, if it was ever declared or joined. */
  get(id: string): AgentRecord | undefined {
    return this.records.get(id);
  }

  /** The record of `id`, made (absent, no URL) if new. */
  ensure(profile: NodeProfile): AgentRecord {
    let record = this.records.get(profile.id);
    if (record === undefined) {
      record = { id: profile.id, profile, url: undefined, presence: 'absent', joins: 0, heartbeats: 0, lastHeartbeatAt: undefined, lastGapMs: undefined, inflight: 0 };
      this.records.set(profile.id, record);
    }
    return record;
  }

  /** Forgets `id` entirely (an agent that joined and never heartbeated: forget-silent.ts). */
  forget(id: string): void {
    this.records.delete(id);
  }

  /** Records that count as members: declared, waiting or joined (not left). */
  members(): number {
    let n = 0;
    for (const r of this.records.values()) if (r.presence !== 'left') n++;
    return n;
  }

  /** A heartbeat of `record` at `at`: its time, and the silence it ended. */
  beat(record: AgentRecord, at: number): void {
    record.lastGapMs = record.lastHeartbeatAt === undefined ? undefined : at - record.lastHeartbeatAt;
    record.lastHeartbeatAt = at;
  }

  /** Every record, in the order they were made. */
  all(): IterableIterator<AgentRecord> {
    return this.records.values();
  }

  /** Agents by state as the swarm says it now, every state present (0 when none). */
  countByState(lifecycle: LifecycleReader): Map<AgentState, number> {
    const counts = new Map<AgentState, number>(AGENT_STATES.map((s) => [s, 0]));
    for (const r of this.records.values()) {
      const state = agentState(r, lifecycle(r.id));
      counts.set(state, (counts.get(state) ?? 0) + 1);
    }
    return counts;
  }

  /** The records joined with the swarm's lifecycle, as plain data sorted by id. */
  view(now: number, lifecycle: LifecycleReader): AgentView[] {
    return [...this.records.values()]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => {
        const node = lifecycle(r.id);
        const state = agentState(r, node);
        return {
          id: r.id,
          url: r.url ?? null,
          state,
          downCause: state === 'down' ? (node?.cause ?? null) : null,
          memoryGb: r.profile.memoryGb,
          score: r.profile.score ?? null,
          joins: r.joins,
          heartbeats: r.heartbeats,
          lastHeartbeatAgoMs: r.lastHeartbeatAt === undefined ? null : now - r.lastHeartbeatAt,
          inflight: r.inflight,
        };
      });
  }
}
