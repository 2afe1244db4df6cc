/**
 * Precise reports shared by an orchestrator's replicas (docs/prefix-cache.md, "Precise mode";
 * `serve --nats`): an agent reports its engine's KV blocks to the orchestrator it talks to, which
 * applies them to its own swarm's feeds and relays them to the other replicas as a part of its load
 * announcements on `hecate.<swarm>.load` (signed as they are), so every replica's index of the
 * agent's copies is the same and a hot prefix routes the same whichever replica takes it. A
 * replica that needs a snapshot (it started late, it saw a gap) says so in its own announcements;
 * the replica the agent talks to then answers the agent's next report with `{ snapshot: true }`.
 * Alone, a report is only applied.
 */
import { kvReportIssue, type KvReport } from '../prefix/kv-feed.js';
import type { PreciseFeeds } from '../prefix/precise-feeds.js';
import type { LoadPart } from '../replication/load-channel.js';

/** What rides one announcement: the reports heard here since the last, and the nodes this replica wants a snapshot of. */
interface KvPart {
  readonly reports: readonly { readonly node: string; readonly report: KvReport }[];
  readonly want: readonly string[];
}

/** See the module comment. */
export class KvShare implements LoadPart {
  readonly name = 'kv';
  private reports: { node: string; report: KvReport }[] = [];
  /** Nodes this replica wants a snapshot of, to announce. */
  private wantOut = new Set<string>();
  /** Nodes another replica wants a snapshot of: the agent's next report here is answered so. */
  private readonly wanted = new Set<string>();
  private changed: (() => void) | undefined;

  /** @param feeds the current swarm's feeds */
  constructor(private readonly feeds: () => PreciseFeeds | undefined) {}

  /** Relays through `channel` from now on (a replica's load channel). */
  attach(channel: { addPart(part: LoadPart): () => void; changed(): void }): void {
    channel.addPart(this);
    this.changed = () => channel.changed();
  }

  /** An agent's report heard here: applied, relayed; true when this replica or another wants the agent's snapshot. */
  accept(node: string, report: KvReport): boolean {
    const want = this.feeds()?.accept(node, report) ?? false;
    if (this.changed === undefined) return want;
    this.reports.push({ node, report });
    this.changed();
    if (report.snapshot !== undefined) this.wanted.delete(node);
    return want || this.wanted.has(node);
  }

  take(): KvPart | undefined {
    if (this.reports.length === 0 && this.wantOut.size === 0) return undefined;
    const part = { reports: this.reports, want: [...this.wantOut] };
    this.reports = [];
    this.wantOut = new Set();
    return part;
  }

  receive(_replica: string, value: unknown): void {
    const part = value as Partial<KvPart> | null;
    if (part === null || typeof part !== 'object') return;
    for (const node of Array.isArray(part.want) ? part.want : []) if (typeof node === 'string') this.wanted.add(node);
    const feeds = this.feeds();
    if (feeds === undefined || !Array.isArray(part.reports)) return;
    let asked = false;
    for (const r of part.reports as unknown[]) {
      const { node, report } = (r ?? {}) as { node?: unknown; report?: unknown };
      if (typeof node !== 'string' || kvReportIssue(report) !== undefined) continue;
      if (feeds.accept(node, report as KvReport)) {
        this.wantOut.add(node);
        asked = true;
      }
    }
    if (asked) this.changed?.();
  }
}
