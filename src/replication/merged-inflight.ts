/**
 * The other replicas' reservations, merged from their announcements (docs/replication.md,
 * "Shared load"). Each replica's announcement is its whole in-flight state, numbered: the merge
 * keeps, per replica, the one with the highest number of its latest incarnation, until that
 * replica falls silent for the announcement's `holdMs`. So it is a map of last-writer-wins
 * registers: applying any announcements in any order, each any number of times, gives the same
 * view as applying each replica's newest once; a lost announcement is healed by the next; and a
 * replica that dies or is cut off stops counting `holdMs` after its last word, not after the
 * full lease lifetime.
 */
import type { LoadAnnouncement } from './load-announcement.js';

/** What the merge keeps of one replica. */
interface Origin {
  readonly epoch: string;
  readonly seq: number;
  /** When it stops counting unless heard again (the merge's clock). */
  readonly until: number;
  readonly counts: ReadonlyMap<string, number>;
}

const NONE: ReadonlyMap<string, number> = new Map();

/** The merged in-flight counts of every other replica, per node. */
export class MergedInflight {
  private readonly origins = new Map<string, Origin>();
  private readonly totals = new Map<string, number>();

  /**
   * @param self this replica's id: its own announcements (NATS echoes them) are not merged
   * @param now the merge's clock (ms)
   * @param changed told each node whose merged count changed, with the new count
   */
  constructor(
    private readonly self: string,
    private readonly now: () => number,
    private readonly changed: (nodeId: string, count: number) => void = () => undefined,
  ) {}

  /**
   * Merges one announcement; returns whether it changed what the replica counts (false for this
   * replica's own, an older or repeated one of the same incarnation). An announcement with
   * `holdMs` 0 forgets its replica.
   */
  receive(a: LoadAnnouncement): boolean {
    if (a.replica === this.self) return false;
    const known = this.origins.get(a.replica);
    if (known !== undefined && known.epoch === a.epoch && known.seq >= a.seq) return false;
    const counts = new Map<string, number>();
    for (const [nodeId, n] of Object.entries(a.inflight)) if (n > 0) counts.set(nodeId, n);
    if (a.holdMs <= 0) {
      // Forgotten; its number is kept (counting nothing) until the next sweep, so an older one arriving just late is refused.
      this.origins.set(a.replica, { epoch: a.epoch, seq: a.seq, until: -Infinity, counts: NONE });
    } else {
      this.origins.set(a.replica, { epoch: a.epoch, seq: a.seq, until: this.now() + a.holdMs, counts });
    }
    this.shift(known?.counts ?? NONE, a.holdMs > 0 ? counts : NONE);
    return true;
  }

  /** Stops counting every replica silent past its `holdMs`; returns how many it dropped. */
  expire(): number {
    const now = this.now();
    let dropped = 0;
    for (const [replica, o] of this.origins) {
      if (o.until > now) continue;
      this.origins.delete(replica);
      if (o.counts.size > 0) {
        this.shift(o.counts, NONE);
        dropped++;
      }
    }
    return dropped;
  }

  /** The merged count on a node (0 when none). */
  count(nodeId: string): number {
    return this.totals.get(nodeId) ?? 0;
  }

  /** Every node with a merged count, and the count. */
  entries(): IterableIterator<[string, number]> {
    return this.totals.entries();
  }

  /** The replicas counted now (heard within their `holdMs`, holding something), as of the last `expire`. */
  replicas(): string[] {
    const out: string[] = [];
    for (const [replica, o] of this.origins) if (o.counts.size > 0) out.push(replica);
    return out.sort();
  }

  /** Drops every replica's counts (this replica was cut off: what it heard is no longer news). */
  clear(): void {
    for (const [replica, o] of this.origins) {
      this.origins.delete(replica);
      this.shift(o.counts, NONE);
    }
  }

  /** Moves the totals from one replica's old counts to its new ones, telling each node that changed. */
  private shift(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): void {
    for (const [nodeId, n] of before) this.add(nodeId, -n + (after.get(nodeId) ?? 0));
    for (const [nodeId, n] of after) if (!before.has(nodeId)) this.add(nodeId, n);
  }

  private add(nodeId: string, delta: number): void {
    if (delta === 0) return;
    const total = (this.totals.get(nodeId) ?? 0) + delta;
    if (total > 0) this.totals.set(nodeId, total);
    else this.totals.delete(nodeId);
    this.changed(nodeId, Math.max(total, 0));
  }
}
