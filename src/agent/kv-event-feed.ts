/**
 * An engine's KV block feed (docs/prefix-cache.md, "Precise mode"): the token-id blocks its caches
 * hold, as `stored` / `removed` / `cleared` events numbered 1, 2, … in this epoch, and the whole
 * set on demand (a snapshot). A block is a run of `blockSize` token ids after the blocks before it
 * in a sequence; sequences sharing a prefix share its blocks, each block counted once per holder:
 * `stored` when its first holder takes it, `removed` when its last lets it go (the blocks after a
 * block always before it). The engine names blocks by its own chained hash; the router never
 * reproduces it. Events wait in a bounded buffer until an agent takes them; past the bound the
 * oldest are dropped and the sequence numbers show the gap (the router then asks for a snapshot).
 */
import { randomUUID } from 'node:crypto';
import type { KvBlock, KvEvent, KvReport, KvSnapshot } from '../prefix/kv-feed.js';

interface Held {
  readonly parent: string | undefined;
  readonly tokens: readonly number[];
  refs: number;
}

/** Events kept for the agent to take; past it the oldest go (a gap). */
export const KV_FEED_MAX_EVENTS = 4096;

/** See the module comment. */
export class KvEventFeed {
  /** Changes when the engine restarts: a new feed, a new epoch. */
  readonly epoch: string;
  private seq = 0;
  private events: KvEvent[] = [];
  /** Per model: block hash → the block. */
  private readonly blocks = new Map<string, Map<string, Held>>();

  constructor(readonly blockSize: number, readonly maxEvents: number = KV_FEED_MAX_EVENTS, epoch: string = randomUUID()) {
    this.epoch = epoch;
  }

  /** The last event's number. */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * A holder of `model`'s sequence `ids`, which held its first `held.length` blocks (their hashes),
   * now holds every whole block of it: the new blocks' hashes are appended to `held`.
   */
  hold(model: string, ids: ArrayLike<number>, held: string[]): void {
    const count = Math.floor(ids.length / this.blockSize);
    if (held.length >= count) return;
    let table = this.blocks.get(model);
    if (table === undefined) this.blocks.set(model, (table = new Map()));
    const stored: KvBlock[] = [];
    let parent = held[held.length - 1];
    for (let k = held.length; k < count; k++) {
      const tokens = Array.from({ length: this.blockSize }, (_, i) => ids[k * this.blockSize + i] as number);
      const hash = blockHash(parent, tokens);
      const b = table.get(hash);
      if (b !== undefined) b.refs++;
      else {
        table.set(hash, { parent, tokens, refs: 1 });
        stored.push({ hash, ...(parent !== undefined ? { parent } : {}), tokens });
      }
      held.push(hash);
      parent = hash;
    }
    if (stored.length > 0) this.push({ seq: 0, kind: 'stored', model, blocks: stored });
  }

  /** A holder lets go of `held`'s blocks from the `keep`-th on (all by default), deepest first. */
  release(model: string, held: string[], keep = 0): void {
    const table = this.blocks.get(model);
    if (table === undefined || held.length <= keep) return;
    const removed: string[] = [];
    for (let k = held.length - 1; k >= keep; k--) {
      const hash = held[k] as string;
      const b = table.get(hash);
      if (b === undefined || --b.refs > 0) continue;
      table.delete(hash);
      removed.push(hash);
    }
    held.length = keep;
    if (removed.length > 0) this.push({ seq: 0, kind: 'removed', model, hashes: removed });
  }

  /** Every block dropped at once. */
  clear(): void {
    this.blocks.clear();
    this.push({ seq: 0, kind: 'cleared' });
  }

  private push(event: KvEvent): void {
    this.events.push({ ...event, seq: ++this.seq });
    if (this.events.length > this.maxEvents) this.events.splice(0, this.events.length - this.maxEvents);
  }

  /**
   * The events since the last take, and with `withSnapshot` the whole set as of the last of them:
   * what the agent reports (a reader that needs the snapshot takes it, one in step the events).
   */
  take(withSnapshot = false): KvReport {
    const events = this.events;
    this.events = [];
    return { epoch: this.epoch, blockSize: this.blockSize, events, ...(withSnapshot ? { snapshot: this.snapshot() } : {}) };
  }

  /**
   * Every block held, each after its parent, as of {@link lastSeq}. A block's holders hold its
   * parent, so a parent is never let go before it: the tables' insertion order is parent first.
   */
  snapshot(): KvSnapshot {
    const stored: { model: string; blocks: KvBlock[] }[] = [];
    for (const [model, table] of this.blocks) {
      const blocks: KvBlock[] = [];
      for (const [hash, b] of table) blocks.push({ hash, ...(b.parent !== undefined ? { parent: b.parent } : {}), tokens: b.tokens });
      stored.push({ model, blocks });
    }
    return { seq: this.seq, stored };
  }
}

/** The engine's name for a block: a 64-bit chained hash of its parent's name and its ids, 16 hex digits. */
function blockHash(parent: string | undefined, tokens: readonly number[]): string {
  let a = parent === undefined ? 0x2545f491 : parseInt(parent.slice(0, 8), 16) | 0;
  let b = parent === undefined ? 0x4f6cdd1d : parseInt(parent.slice(8), 16) | 0;
  for (const t of tokens) {
    a = Math.imul(a ^ t, 0x01000193);
    b = Math.imul(b ^ (t + 0x632be5ab), 0x9e3779b1);
    b ^= b >>> 15;
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}
