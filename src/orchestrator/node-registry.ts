/**
 * The orchestrator's address book of agents: where each one's stage server listens (or that it
 * has none yet, or withdrew it), the card it joined with, how often it joined and heartbeat, and
 * the stage calls to it in flight. Nothing here is a lifecycle: whether an agent waits, is alive,
 * suspect or down, and when it was last heard, are read from their owners when asked
 * (agent-view.ts; docs/serve.md, "An agent's state").
 */
import type { NodeProfile } from '../core/types.js';

/** One agent's entry: written by the book's methods only, but for its calls in flight (the stage client's). */
export interface AgentRecord {
  readonly id: string;
  /** The card it last joined with (or was declared with): a member's is the Swarm's to say. */
  readonly profile: NodeProfile;
  /** Where its stage server listens; undefined until it joins. */
  readonly url: string | undefined;
  /**
   * It withdrew its address (it left, here or at another orchestrator of the swarm): its
   * heartbeats are refused until it joins again. The URL stays, for calls already under way.
   */
  readonly left: boolean;
  /**
   * A left agent's last heartbeat, as its node held it when it left: its node may leave the
   * swarm with it, and with it the one owner of that time.
   */
  readonly heardBeforeLeaving: number | undefined;
  readonly joins: number;
  readonly heartbeats: number;
  /** Bytes of KV cache its last heartbeat reported (an engine that keeps one); undefined before. */
  readonly kvBytes: number | undefined;
  /** Stage calls to it running now. */
  inflight: number;
}

/** An entry as the book writes it. */
type Entry = { -readonly [K in keyof AgentRecord]: AgentRecord[K] };

/** Every agent the orchestrator has heard of, by id, in the order they were first written. */
export class NodeRegistry {
  private readonly records = new Map<string, Entry>();
  private readonly forgetters: ((id: string) => void)[] = [];

  /** @param onForget told of each id forgotten (its metrics series go with it: serve-metrics.ts) */
  constructor(onForget: (id: string) => void = () => {}) {
    this.forgetters.push(onForget);
  }

  /** `listener` is told of each id forgotten from now on (the bench forgets it too: member-bench.ts). */
  whenForgotten(listener: (id: string) => void): void {
    this.forgetters.push(listener);
  }

  /** The entry of `id`, if it was ever declared or joined. */
  get(id: string): AgentRecord | undefined {
    return this.records.get(id);
  }

  /** A declared node (a topology): an entry with no address until its agent joins. */
  declare(profile: NodeProfile): AgentRecord {
    return this.entry(profile);
  }

  private entry(profile: NodeProfile): Entry {
    let record = this.records.get(profile.id);
    if (record === undefined) {
      record = { id: profile.id, profile, url: undefined, left: false, heardBeforeLeaving: undefined, joins: 0, heartbeats: 0, kvBytes: undefined, inflight: 0 };
      this.records.set(profile.id, record);
    }
    return record;
  }

  /** `profile.id` listens at `url`: written by its join elsewhere (the shared directory), or by {@link joined}. */
  addressed(profile: NodeProfile, url: string): AgentRecord {
    return this.address(profile, url);
  }

  private address(profile: NodeProfile, url: string): Entry {
    const record = this.entry(profile);
    record.profile = profile;
    record.url = url;
    record.left = false;
    record.heardBeforeLeaving = undefined;
    return record;
  }

  /** `profile.id` joined here at `url`; `rejoin` when it had joined here before (a restart). */
  joined(profile: NodeProfile, url: string): { record: AgentRecord; rejoin: boolean } {
    const rejoin = (this.records.get(profile.id)?.joins ?? 0) > 0;
    const record = this.address(profile, url);
    record.joins++;
    record.kvBytes = undefined; // a restarted agent holds no cache until it says so
    return { record, rejoin };
  }

  /** A heartbeat of `id` came here: counted, with what it reported (its time is its node's, or the waiting room's). */
  heard(id: string, report: { readonly kvBytes?: number } = {}): void {
    const record = this.records.get(id);
    if (record === undefined) return;
    record.heartbeats++;
    if (report.kvBytes !== undefined) record.kvBytes = report.kvBytes;
  }

  /** `id` left: its address withdrawn, its last heartbeat (`heardAt`, its node's) kept for the view. */
  withdraw(id: string, heardAt: number | undefined): void {
    const record = this.records.get(id);
    if (record === undefined) return;
    record.left = true;
    record.heardBeforeLeaving = heardAt;
  }

  /** Forgets `id` entirely (an agent that joined and never heartbeated: forget-silent.ts). */
  forget(id: string): void {
    this.records.delete(id);
    for (const forget of this.forgetters) forget(id);
  }

  /** Entries that count as members: declared, waiting or joined (not left). */
  members(): number {
    let n = 0;
    for (const r of this.records.values()) if (!r.left) n++;
    return n;
  }

  /** Every entry, in the order they were made. */
  all(): IterableIterator<AgentRecord> {
    return this.records.values();
  }
}
