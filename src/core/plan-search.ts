/**
 * The planner's local search: after nodes are dealt to copies and memory is repaired, move or
 * swap nodes between copies while that raises total throughput Σ 1/T (T = a copy's slowest
 * stage, layers / score), pricing each move with an incremental water-fill.
 */

/** A node as the planner sees it while filling one model. */
export interface Candidate {
  readonly id: string;
  readonly score: number;
  /** Layers of the current model it can still hold. */
  readonly cap: number;
  /**
   * Layers of the model its full memory holds, where a stage bound reads full memory (a plan of
   * several models, docs/cost.md "A stage bound"); absent, the bound reads `cap`.
   */
  readonly full?: number;
}

/** Orders candidates fastest first; more memory, then id, break ties. */
export function byCapability(a: Candidate, b: Candidate): number {
  return b.score - a.score || b.cap - a.cap || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Copy-time evaluations one model's local search may spend: keeps 1,000-node swarms in milliseconds. */
const SEARCH_BUDGET = 500;

/**
 * Local search on the partition: moves a node to another copy, or swaps two nodes between
 * copies, whenever that raises Σ 1 / T (T a copy's slowest stage after water-filling) and every
 * copy can still hold the model. When memory and speed disagree this is where throughput is won:
 * a fast node with little memory wastes its speed in a slow copy, so gathering such nodes in one
 * fast copy (beside enough memory) beats dealing them out evenly. Moves first, then swaps; first
 * improvement, nodes in capability order; a fixed evaluation budget: deterministic and bounded.
 */
export function improvePartition(start: readonly Candidate[][], layers: number): Candidate[][] {
  const copies = start.length;
  if (copies < 2) return start.map((g) => [...g]);
  const nodes = start.flat().sort(byCapability);
  const rank = new Map(nodes.map((c, i) => [c, i]));
  const fill = new WaterFill(
    Float64Array.from(nodes, (c) => c.score),
    Int32Array.from(nodes, (c) => Math.min(c.cap, layers)),
    layers,
  );
  const groupOf = new Int32Array(nodes.length);
  const members: number[][] = start.map((g, gi) => {
    const m = g.map((c) => rank.get(c) as number).sort((a, b) => a - b);
    for (const i of m) groupOf[i] = gi;
    return m;
  });
  const time = members.map((m) => fill.time(m, -1, -1, true));
  let budget = SEARCH_BUDGET;
  const better = (before: number, after: number) => after > before * (1 + 1e-9);
  const eval1 = (g: number, skip: number, extra: number) => {
    budget--;
    return fill.time(members[g] as number[], skip, extra, false);
  };
  const commit = (x: number, a: number, b: number, y: number) => {
    move(members, groupOf, x, a, b);
    if (y >= 0) move(members, groupOf, y, b, a);
    time[a] = fill.time(members[a] as number[], -1, -1, true);
    time[b] = fill.time(members[b] as number[], -1, -1, true);
  };

  for (const swaps of [false, true]) {
    for (let improved = true; improved && budget > 0; ) {
      improved = false;
      const slowest = Math.max(...time);
      for (let x = 0; x < nodes.length && budget > 0; x++) {
        // Too slow to take one layer in any copy: moving it changes no copy's time.
        if (fill.firstLayerTime(x) >= slowest) break;
        const a = groupOf[x] as number;
        const ta = time[a] as number;
        const active = fill.held[x] as number > 0;
        const without = active ? eval1(a, x, -1) : ta;
        for (let b = 0; b < copies && budget > 0; b++) {
          if (b === a) continue;
          const tb = time[b] as number;
          const base = 1 / ta + 1 / tb;
          if (!swaps) {
            if (without === Infinity || (!active && fill.firstLayerTime(x) >= tb)) continue;
            if (better(base, 1 / without + 1 / eval1(b, -1, x))) {
              commit(x, a, b, -1);
              improved = true;
              break;
            }
            continue;
          }
          if (!active) continue;
          // Partners: the nodes of b that hold layers, and b's largest memory it leaves idle.
          let idleBig = -1;
          for (const y of members[b] as number[]) {
            if ((fill.held[y] as number) === 0 && (idleBig === -1 || (fill.cap[y] as number) > (fill.cap[idleBig] as number))) idleBig = y;
          }
          let swapped = false;
          for (const y of members[b] as number[]) {
            if (budget <= 0) break;
            if ((fill.held[y] as number) === 0 && y !== idleBig) continue;
            const ta2 = eval1(a, x, y);
            if (ta2 === Infinity) continue;
            if (better(base, 1 / ta2 + 1 / eval1(b, y, x))) {
              commit(x, a, b, y);
              swapped = true;
              break;
            }
          }
          if (swapped) {
            improved = true;
            break;
          }
        }
      }
    }
  }
  return members.map((m) => m.map((i) => nodes[i] as Candidate));
}

function move(members: number[][], groupOf: Int32Array, x: number, from: number, to: number): void {
  const src = members[from] as number[];
  src.splice(src.indexOf(x), 1);
  const dst = members[to] as number[];
  let at = 0;
  while (at < dst.length && (dst[at] as number) < x) at++;
  dst.splice(at, 0, x);
  groupOf[x] = to;
}

/**
 * The optimal slowest-stage time of one copy (what {@link splitLayers} reaches) without building
 * stages: the `layers`-th smallest layer time j / score (1 <= j <= capacity), drawn from a heap
 * that admits nodes lazily, fastest first. Members are node indices in capability order (score
 * descending); `skip` leaves one out and `extra` adds one, so a move is priced without copying.
 * @internal shared by the local search and the short-copy builder (plan-short.ts)
 */
export class WaterFill {
  /** Layers each node holds in the last copy timed with `record`. */
  readonly held: Int32Array;
  private readonly key: Float64Array;
  private readonly who: Int32Array;
  private readonly count: Int32Array;
  private size = 0;

  constructor(
    private readonly score: Float64Array,
    readonly cap: Int32Array,
    private readonly layers: number,
  ) {
    const n = score.length + 1;
    this.held = new Int32Array(n);
    this.key = new Float64Array(n);
    this.who = new Int32Array(n);
    this.count = new Int32Array(n);
  }

  firstLayerTime(i: number): number {
    return 1 / (this.score[i] as number);
  }

  /** Infinity when the copy cannot hold the model. */
  time(members: readonly number[], skip: number, extra: number, record: boolean): number {
    const { score, cap, key, held } = this;
    if (record) for (const m of members) held[m] = 0;
    this.size = 0;
    let p = 0;
    let extraLeft = extra >= 0;
    let worst = 0;
    for (let l = 0; l < this.layers; l++) {
      // Admit the next members (merged with `extra`) while their first layer beats the heap's best.
      for (;;) {
        while (p < members.length && members[p] === skip) p++;
        let m = p < members.length ? (members[p] as number) : -1;
        const takeExtra = extraLeft && (m === -1 || extra < m);
        if (takeExtra) m = extra;
        if (m === -1) break;
        const k = 1 / (score[m] as number);
        if (this.size > 0 && k >= (key[0] as number)) break;
        if (takeExtra) extraLeft = false;
        else p++;
        this.push(k, m, 0);
      }
      if (this.size === 0) return Infinity;
      const i = this.who[0] as number;
      const n = (this.count[0] as number) + 1;
      worst = key[0] as number;
      this.pop();
      if (record) held[i] = n;
      if (n < (cap[i] as number)) this.push((n + 1) / (score[i] as number), i, n);
    }
    return worst;
  }

  private push(k: number, i: number, n: number): void {
    const { key, who, count } = this;
    let at = this.size++;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if ((key[parent] as number) <= k) break;
      key[at] = key[parent] as number;
      who[at] = who[parent] as number;
      count[at] = count[parent] as number;
      at = parent;
    }
    key[at] = k;
    who[at] = i;
    count[at] = n;
  }

  private pop(): void {
    const { key, who, count } = this;
    const last = --this.size;
    const k = key[last] as number;
    const i = who[last] as number;
    const n = count[last] as number;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= last) break;
      if (child + 1 < last && (key[child + 1] as number) < (key[child] as number)) child++;
      if ((key[child] as number) >= k) break;
      key[at] = key[child] as number;
      who[at] = who[child] as number;
      count[at] = count[child] as number;
      at = child;
    }
    key[at] = k;
    who[at] = i;
    count[at] = n;
  }
}

