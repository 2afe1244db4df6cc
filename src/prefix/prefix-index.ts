/**
 * The prefix-cache index (docs/prefix-cache.md): which prompt blocks each copy of a model is
 * estimated to hold in its KV cache. It keeps block keys (chained hashes), never prompt text.
 *
 * - **One map from block key to the copies holding it**, so a lookup walks the prompt's blocks,
 *   not the copies. A copy's blocks of one chain always form a prefix (below), so "does any copy
 *   hold block k" and "does copy c hold block k" are monotone in k: both depths are found by
 *   binary search, O(log blocks) map reads.
 * - **Per copy, a tree of blocks evicted least-recently-used, leaves first**, as SGLang's radix
 *   cache evicts: each block knows its parent (the block before it) and how many children the
 *   copy holds under it; only a leaf is evicted, and an evicted leaf hands its recency to its
 *   parent. So a copy never holds block k without block k − 1, and touching a prompt costs O(1)
 *   for the blocks already held (only its deepest block is stamped), plus one entry per new block.
 *   Leaves wait in a min-heap on their stamp; a stale heap item is re-queued when popped.
 * - **Bounded**: each copy holds at most its KV capacity in tokens (`kvCapacities`) and at most
 *   `maxBlocksPerCopy` blocks; a copy whose node goes down or leaves, or whose stages change,
 *   loses every entry.
 */
import { FillOrder, type FillSlot } from './fill-order.js';
import { kvCapacities } from './kv-capacity.js';
import { popLeaf, pushLeaf } from './leaf-heap.js';
import type { Pipeline, SwarmPlan } from '../core/types.js';

/** One block held by one copy. */
export interface Entry {
  readonly key: number;
  /** The copy's slot. */
  readonly slot: number;
  readonly tokens: number;
  readonly parent: Entry | undefined;
  /** Blocks this copy holds right after this one. */
  children: number;
  /** Last use: the deepest block of a prompt is stamped; an evicted child hands its stamp up. */
  stamp: number;
  inHeap: boolean;
  removed: boolean;
  /** On a precise copy, a block a route sent that its engine has not reported yet: the report tick it came at (0: reported). */
  provisional?: number;
  /** The copy's list of entries (wiped in one walk). */
  prev: Entry | undefined;
  next: Entry | undefined;
}

/** One copy's cache, as the index estimates it. */
export class CopyCache implements FillSlot {
  fill = 0;
  fillModel: string | undefined = undefined;
  readonly at = [-1];
  /** Tokens the copy's KV memory holds (from the plan). */
  capacity = 0;
  /** Tokens the index lets it hold now: the capacity, lowered when reports show the copy evicts sooner. */
  limit = 0;
  used = 0;
  count = 0;
  /** Bumped at every wipe: a lease routed before it corrects nothing after. */
  generation = 0;
  /** Fed by its engine's reports (precise-feeds.ts): releases no longer correct it, routes add only provisional blocks. */
  precise = false;
  /** A precise copy's provisional blocks, and its reports heard (the ticks they expire by). */
  provisional: Entry[] = [];
  ticks = 0;
  head: Entry | undefined;
  heap: Entry[] = [];
  heapStamps: number[] = [];
  constructor(
    readonly slot: number,
    readonly id: string,
    /** The plan's pipeline (replaced at each plan adopted). */
    public pipeline: Pipeline,
    /** Its stages as `node:start-end,…`: a change of stages wipes it. */
    public shape: string,
  ) {}
}

function shapeOf(p: SwarmPlan['pipelines'][number]): string {
  return p.stages.map((s) => `${s.nodeId}:${s.layerStart}-${s.layerEnd}`).join(',');
}

/** See the module comment. */
export class PrefixIndex {
  /** Block key → its holder, or a map of its holders by copy slot when several copies hold it (most blocks have one). */
  private readonly blocks = new Map<number, Entry | Map<number, Entry>>();
  readonly copies = new Map<string, CopyCache>();
  private readonly bySlot = new Map<number, CopyCache>();
  /** The copies of each model by fill: where a new prompt goes. */
  readonly fills = new FillOrder<CopyCache>();
  private byNode = new Map<string, CopyCache[]>();
  private nextSlot = 0;
  private clock = 0;

  constructor(
    plan: SwarmPlan,
    private readonly memoryOf: (nodeId: string) => number | undefined,
    private readonly maxBlocks: number,
  ) {
    this.adopt(plan);
  }

  /** Blocks held over every copy. */
  get size(): number {
    let n = 0;
    for (const c of this.copies.values()) n += c.count;
    return n;
  }

  /** Takes a new plan: copies gone are dropped, copies whose stages changed wiped, capacities read again. */
  adopt(plan: SwarmPlan): void {
    const capacities = kvCapacities(plan, this.memoryOf);
    const seen = new Set<string>();
    const byNode = new Map<string, CopyCache[]>();
    for (const p of plan.pipelines) {
      seen.add(p.id);
      const shape = shapeOf(p);
      let c = this.copies.get(p.id);
      const capacity = capacities.get(p.id) ?? 0;
      if (c === undefined) {
        c = new CopyCache(this.nextSlot++, p.id, p, shape);
        this.copies.set(p.id, c);
        this.bySlot.set(c.slot, c);
        this.fills.add(p.modelId, c);
      } else if (c.shape !== shape) {
        this.wipe(c);
        c.precise = false;
        c.shape = shape;
        this.fills.add(p.modelId, c);
      }
      c.pipeline = p;
      c.capacity = capacity;
      c.limit = c.capacity;
      this.evict(c);
      for (const s of p.stages) {
        const list = byNode.get(s.nodeId);
        if (list === undefined) byNode.set(s.nodeId, [c]);
        else list.push(c);
      }
    }
    for (const [id, c] of this.copies) {
      if (seen.has(id)) continue;
      this.wipe(c);
      this.copies.delete(id);
      this.bySlot.delete(c.slot);
      this.fills.remove(c);
    }
    this.byNode = byNode;
  }

  /** A node went down or left: every copy through it loses its entries (its KV cache spans every stage). */
  nodeLost(nodeId: string): void {
    for (const c of this.byNode.get(nodeId) ?? []) {
      this.wipe(c);
      c.precise = false;
      this.fills.add(c.pipeline.modelId, c);
    }
  }

  /** The copies (of `modelId`, or any) whose first stage runs on `nodeId`: the engine there sees their prompts' token ids. */
  fedBy(nodeId: string, modelId?: string): CopyCache[] {
    return (this.byNode.get(nodeId) ?? []).filter((c) => (modelId === undefined || c.pipeline.modelId === modelId) && c.pipeline.stages[0]?.nodeId === nodeId);
  }

  /** How many of `keys[0..count)` any copy holds, from the first: the deepest match anywhere. */
  deepest(keys: Float64Array, count: number): number {
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.blocks.has(keys[mid - 1] as number)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Calls `visit` with each copy holding block `key` (in the order they took it), until it returns false. */
  holders(key: number, visit: (c: CopyCache) => boolean): void {
    const h = this.blocks.get(key);
    if (h === undefined) return;
    if (!(h instanceof Map)) {
      visit(this.bySlot.get(h.slot) as CopyCache);
      return;
    }
    for (const slot of h.keys()) if (!visit(this.bySlot.get(slot) as CopyCache)) return;
  }

  /** How many of `keys[0..count)` copy `c` holds, from the first. */
  depth(c: CopyCache, keys: Float64Array, count: number): number {
    if (c.count === 0) return 0;
    let lo = 0;
    let hi = count;
    const slot = c.slot;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.holder(keys[mid - 1] as number, slot) !== undefined) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Copy `c` now holds the prompt `keys[0..count)`, each block worth `tokens` tokens, whose first
   * `held` blocks it already held: its deepest block is stamped most recent, new blocks are added,
   * and least-recently-used leaves are evicted past the copy's bounds.
   */
  record(c: CopyCache, keys: Float64Array, count: number, held: number, tokens: number): void {
    if (count === 0 || (c.limit < tokens && !c.precise)) return;
    const stamp = ++this.clock;
    let parent = held > 0 ? this.holder(keys[held - 1] as number, c.slot) : undefined;
    for (let k = held; k < count; k++) {
      const key = keys[k] as number;
      let e = this.holder(key, c.slot);
      if (e === undefined) {
        e = this.add(c, key, parent, tokens, stamp);
        if (c.precise) {
          e.provisional = c.ticks + 1; // coming: the prefill the route sends will store it
          c.provisional.push(e);
        }
      }
      parent = e;
    }
    const tip = parent;
    if (tip === undefined) return;
    tip.stamp = stamp;
    if (tip.children === 0 && !tip.inHeap) pushLeaf(c, tip);
    this.evict(c);
  }

  /**
   * The copy reported `reported` cached tokens where the index estimated `estimate`: fewer means
   * it evicts sooner than its capacity says, so the index's limit for it drops by the difference
   * (never below one block); more raises it back, up to the capacity.
   */
  correct(c: CopyCache, estimate: number, reported: number, blockTokens: number): void {
    if (c.precise) return;
    if (reported < estimate) c.limit = Math.max(blockTokens, Math.min(c.limit, c.used) - (estimate - reported));
    else if (reported > estimate) c.limit = Math.min(c.capacity, c.limit + (reported - estimate));
    this.evict(c);
  }

  /**
   * A precise copy's engine stored block `key` after the block `parentKey` (none: a prompt's
   * first), worth `tokens` tokens: held, most recent. False when the parent is not held (the block
   * could never be matched).
   */
  store(c: CopyCache, key: number, parentKey: number | undefined, tokens: number): boolean {
    const parent = parentKey === undefined ? undefined : this.holder(parentKey, c.slot);
    if (parentKey !== undefined && parent === undefined) return false;
    const stamp = ++this.clock;
    const held = this.holder(key, c.slot);
    if (held !== undefined) {
      held.stamp = stamp;
      held.provisional = 0;
      return true;
    }
    pushLeaf(c, this.add(c, key, parent, tokens, stamp));
    this.evict(c);
    return true;
  }

  /** A new entry of copy `c` for block `key` after `parent`: held, listed, counted. */
  private add(c: CopyCache, key: number, parent: Entry | undefined, tokens: number, stamp: number): Entry {
    const e: Entry = { key, slot: c.slot, tokens, parent, children: 0, stamp, inHeap: false, removed: false, prev: undefined, next: c.head };
    if (c.head !== undefined) c.head.prev = e;
    c.head = e;
    this.hold(e);
    if (parent !== undefined) parent.children++;
    c.used += tokens;
    c.count++;
    return e;
  }

  /** A precise copy's engine removed block `key`: it goes, with every block held after it (no prompt can reach them). */
  unstore(c: CopyCache, key: number): void {
    const e = this.holder(key, c.slot);
    if (e === undefined) return;
    const gone: [Entry, number][] = [];
    if (e.children > 0) {
      for (let x = c.head; x !== undefined; x = x.next) {
        let depth = 0;
        for (let up = x.parent; up !== undefined; up = up.parent, depth++) if (up === e) gone.push([x, depth]);
      }
      gone.sort((a, b) => b[1] - a[1]); // the deepest first: each is a leaf when it goes
    }
    for (const [x] of gone) this.remove(c, x);
    this.remove(c, e);
  }

  /**
   * A precise copy's engine reported: the provisional blocks routes sent it `ttl` reports ago or
   * more that its engine never stored are dropped (with the blocks after them).
   */
  expire(c: CopyCache, ttl: number): void {
    c.ticks++;
    if (c.provisional.length === 0) return;
    const keep: Entry[] = [];
    for (const e of c.provisional) {
      if (e.removed || e.provisional === 0) continue;
      if (c.ticks + 1 - (e.provisional ?? 0) < ttl) keep.push(e);
      else this.unstore(c, e.key);
    }
    c.provisional = keep;
  }

  /** Every entry of a copy dropped. */
  wipe(c: CopyCache): void {
    for (let e = c.head; e !== undefined; e = e.next) {
      e.removed = true;
      this.release(e);
    }
    c.head = undefined;
    c.used = 0;
    c.count = 0;
    c.heap = [];
    c.heapStamps = [];
    c.provisional = [];
    c.generation++;
  }

  private evict(c: CopyCache): void {
    while (((c.used > c.limit && !c.precise) || c.count > this.maxBlocks) && c.heap.length > 0) {
      const [e, pushed] = popLeaf(c);
      if (e.removed) continue;
      e.inHeap = false;
      if (e.children > 0) continue; // no longer a leaf: queued again when it is one
      if (e.stamp > pushed) {
        pushLeaf(c, e); // touched since it was queued
        continue;
      }
      this.remove(c, e);
    }
  }

  private remove(c: CopyCache, e: Entry): void {
    e.removed = true;
    this.release(e);
    if (e.prev !== undefined) e.prev.next = e.next;
    else c.head = e.next;
    if (e.next !== undefined) e.next.prev = e.prev;
    c.used -= e.tokens;
    c.count--;
    const p = e.parent;
    if (p !== undefined) {
      p.children--;
      if (e.stamp > p.stamp) p.stamp = e.stamp;
      if (p.children === 0 && !p.inHeap) pushLeaf(c, p);
    }
  }

  /** The entry of copy `slot` for block `key`, if it holds it. */
  private holder(key: number, slot: number): Entry | undefined {
    const h = this.blocks.get(key);
    if (h === undefined) return undefined;
    if (h instanceof Map) return h.get(slot);
    return h.slot === slot ? h : undefined;
  }

  private hold(e: Entry): void {
    const h = this.blocks.get(e.key);
    if (h === undefined) this.blocks.set(e.key, e);
    else if (h instanceof Map) h.set(e.slot, e);
    else this.blocks.set(e.key, new Map([[h.slot, h], [e.slot, e]]));
  }

  private release(e: Entry): void {
    const h = this.blocks.get(e.key);
    if (h === e) this.blocks.delete(e.key);
    else if (h instanceof Map) {
      h.delete(e.slot);
      if (h.size === 1) this.blocks.set(e.key, h.values().next().value as Entry);
    }
  }
}
