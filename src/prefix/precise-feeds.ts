/**
 * Precise mode (docs/prefix-cache.md, "Precise mode"): the copies whose first stage's engine
 * reports its cache ({@link KvReport}) are fed by those reports instead of estimated. Per reporting
 * node: its engine's epoch, the last sequence number applied, and its engine hashes → the router's
 * keys (each block keyed on the router's own hash of its token ids, chained on its parent's key).
 *
 * A node heard for the first time, a new epoch (the engine restarted: its copies are wiped), a gap
 * in the sequence numbers, or a plan that changed its copies asks for a snapshot; until one comes
 * the copies are estimated as without reports (after a gap, from the blocks they held). A
 * snapshot replaces the copies' blocks and makes them precise again.
 */
import type { KvBlock, KvEvent, KvReport } from './kv-feed.js';
import type { CopyCache, PrefixIndex } from './prefix-index.js';
import { idBlockKey, stringSeed } from './prompt-blocks.js';

/**
 * Reports a route's blocks stay provisional on a precise copy (counted as coming, as the engine
 * will store them once its prefill runs) unless the engine reports them: about a second at an
 * agent's 100 ms reports.
 */
export const PROVISIONAL_REPORTS = 10;

/** Why a node's feed waits for a snapshot. */
type Want = 'new' | 'restart' | 'gap' | 'plan';

interface NodeFeed {
  readonly epoch: string;
  readonly blockSize: number;
  /** The last event applied. */
  seq: number;
  want: Want | undefined;
  /** Per model: the engine's block hash → the router's key. */
  readonly keys: Map<string, Map<string, number>>;
}

/** The precise feeds' counters. */
export interface PreciseStats {
  /** Copies fed by reports now, and the others (estimated), by id. */
  readonly precise: readonly string[];
  readonly estimated: readonly string[];
  /** Blocks the precise copies hold, over all of them. */
  readonly blocks: number;
  /** Snapshots applied, and of those the ones that healed a gap in the sequence numbers. */
  readonly snapshots: number;
  readonly gapsHealed: number;
  /** Gaps seen, and engine restarts (a new epoch of a node already heard). */
  readonly gaps: number;
  readonly restarts: number;
  /** Events applied. */
  readonly events: number;
}

/** See the module comment. */
export class PreciseFeeds {
  private readonly feeds = new Map<string, NodeFeed>();
  /** Each model's block size: its precise copies' (the first snapshot's); a node reporting another stays estimated while they are. */
  private readonly sizes = new Map<string, number>();
  private readonly counters = { snapshots: 0, gapsHealed: 0, gaps: 0, restarts: 0, events: 0 };

  /** @param index the router's index (built on first use) */
  constructor(private readonly index: () => PrefixIndex) {}

  /** The block size of `modelId`'s precise copies, if any reported: id prompts are cut at it. */
  blockSize(modelId: string): number | undefined {
    return this.sizes.get(modelId);
  }

  /**
   * Takes node `nodeId`'s report (checked by {@link kvReportIssue}); true when it should send a
   * snapshot (the answer to its report says so).
   */
  accept(nodeId: string, report: KvReport): boolean {
    const index = this.index();
    let f = this.feeds.get(nodeId);
    if (f === undefined || f.epoch !== report.epoch || f.blockSize !== report.blockSize) {
      if (f !== undefined) {
        this.counters.restarts++;
        index.nodeLost(nodeId); // a restarted engine holds nothing: every copy through it is wiped, estimated
      }
      f = { epoch: report.epoch, blockSize: report.blockSize, seq: 0, want: f === undefined ? 'new' : 'restart', keys: new Map() };
      this.feeds.set(nodeId, f);
    }
    if (report.snapshot !== undefined && f.want !== undefined) this.snapshot(nodeId, f, report.snapshot);
    if (f.want !== undefined) return true;
    for (const c of this.precise(nodeId)) index.expire(c, PROVISIONAL_REPORTS);
    for (const e of report.events) {
      if (e.seq <= f.seq) continue; // heard already
      if (e.seq !== f.seq + 1) {
        this.counters.gaps++;
        f.want = 'gap';
        f.keys.clear();
        for (const c of index.fedBy(nodeId)) c.precise = false; // estimated from what it held, until the snapshot
        return true;
      }
      f.seq = e.seq;
      this.apply(nodeId, f, e);
    }
    return false;
  }

  private snapshot(nodeId: string, f: NodeFeed, snapshot: NonNullable<KvReport['snapshot']>): void {
    const index = this.index();
    for (const c of index.fedBy(nodeId)) {
      const model = c.pipeline.modelId;
      // Another node's precise copies of the model cut its prompts at another size: this one stays estimated.
      if ((this.sizes.get(model) ?? f.blockSize) !== f.blockSize && [...index.copies.values()].some((o) => o.precise && o.pipeline.modelId === model && o.pipeline.stages[0]?.nodeId !== nodeId)) continue;
      index.wipe(c);
      c.precise = true;
      this.sizes.set(c.pipeline.modelId, f.blockSize);
    }
    f.keys.clear();
    for (const g of snapshot.stored) this.stored(nodeId, f, g.model, g.blocks);
    this.counters.snapshots++;
    if (f.want === 'gap') this.counters.gapsHealed++;
    f.want = undefined;
    f.seq = snapshot.seq;
  }

  private apply(nodeId: string, f: NodeFeed, e: KvEvent): void {
    this.counters.events++;
    const index = this.index();
    if (e.kind === 'stored') this.stored(nodeId, f, e.model, e.blocks);
    else if (e.kind === 'removed') {
      const keys = f.keys.get(e.model);
      if (keys === undefined) return;
      const copies = this.precise(nodeId, e.model);
      for (const hash of e.hashes) {
        const key = keys.get(hash);
        if (key === undefined) continue;
        keys.delete(hash);
        for (const c of copies) index.unstore(c, key);
      }
    } else {
      f.keys.clear();
      for (const c of index.fedBy(nodeId)) if (c.precise) index.wipe(c);
    }
  }

  private stored(nodeId: string, f: NodeFeed, model: string, blocks: readonly KvBlock[]): void {
    const copies = this.precise(nodeId, model);
    if (copies.length === 0) return;
    const index = this.index();
    let keys = f.keys.get(model);
    if (keys === undefined) f.keys.set(model, (keys = new Map()));
    const seed = stringSeed(model);
    for (const b of blocks) {
      const parent = b.parent === undefined ? undefined : keys.get(b.parent);
      if (b.parent !== undefined && parent === undefined) continue; // its parent was never heard: unreachable
      const key = idBlockKey(parent, seed, b.tokens);
      keys.set(b.hash, key);
      for (const c of copies) index.store(c, key, parent, f.blockSize);
    }
  }

  private precise(nodeId: string, model?: string): CopyCache[] {
    return this.index().fedBy(nodeId, model).filter((c) => c.precise);
  }

  /** A node went down or left: its copies were wiped; its next report starts again (a snapshot). */
  nodeLost(nodeId: string): void {
    this.feeds.delete(nodeId);
  }

  /** A plan was adopted: a node whose copies are not all precise any more (new, restaged) is asked for a snapshot. */
  adopted(): void {
    const index = this.index();
    for (const [nodeId, f] of this.feeds) {
      if (f.want !== undefined) continue;
      const copies = index.fedBy(nodeId);
      if (copies.every((c) => c.precise)) continue;
      f.want = 'plan';
      for (const c of copies) c.precise = false;
    }
  }

  /** The counters, and which copies are precise now. */
  stats(): PreciseStats {
    const precise: string[] = [];
    const estimated: string[] = [];
    let blocks = 0;
    for (const c of this.index().copies.values()) {
      (c.precise ? precise : estimated).push(c.id);
      if (c.precise) blocks += c.count;
    }
    return { precise, estimated, blocks, ...this.counters };
  }
}
