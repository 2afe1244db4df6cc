/**
 * What the orchestrator knows of each agent beyond the Swarm's telemetry: its URL, its state as
 * the detector's events tell it (suspect is not in the Swarm's table), joins, heartbeats and the
 * stage calls it has in flight.
 */
import type { NodeProfile } from '../core/types.js';

/** An agent's state as the orchestrator shows it. */
export type AgentState = 'absent' | 'pending' | 'alive' | 'suspect' | 'down' | 'left';

/** One agent. */
export interface AgentRecord {
  readonly id: string;
  profile: NodeProfile;
  /** Where its stage server listens; undefined until it joins. */
  url: string | undefined;
  state: AgentState;
  /** Why it is down (`manual`, `detector`, `ejected`), when it is. */
  downCause: string | undefined;
  joins: number;
  heartbeats: number;
  lastHeartbeatAt: number | undefined;
  suspectedAt: number | undefined;
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
      record = { id: profile.id, profile, url: undefined, state: 'absent', downCause: undefined, joins: 0, heartbeats: 0, lastHeartbeatAt: undefined, suspectedAt: undefined, inflight: 0 };
      this.records.set(profile.id, record);
    }
    return record;
  }

  /** Every record, in the order they were made. */
  all(): IterableIterator<AgentRecord> {
    return this.records.values();
  }

  /** Records by state, every state present (0 when none). */
  countByState(): Map<AgentState, number> {
    const counts = new Map<AgentState, number>(['absent', 'pending', 'alive', 'suspect', 'down', 'left'].map((s) => [s as AgentState, 0]));
    for (const r of this.records.values()) counts.set(r.state, (counts.get(r.state) ?? 0) + 1);
    return counts;
  }

  /** The records as plain data, sorted by id. */
  view(now: number): AgentView[] {
    return [...this.records.values()]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => ({
        id: r.id,
        url: r.url ?? null,
        state: r.state,
        downCause: r.downCause ?? null,
        memoryGb: r.profile.memoryGb,
        score: r.profile.score ?? null,
        joins: r.joins,
        heartbeats: r.heartbeats,
        lastHeartbeatAgoMs: r.lastHeartbeatAt === undefined ? null : now - r.lastHeartbeatAt,
        inflight: r.inflight,
      }));
  }
}
