import { PlanError } from './errors.js';
import type { ModelSpec, NodeProfile, Pipeline, Stage, SwarmPlan } from './types.js';
import { modelIssues, profileIssues, validatePlan } from './validate.js';

/** What to plan: the models, each with its number of copies. */
export interface PlanConfig {
  readonly models: readonly ModelSpec[];
}

/** A node as the planner sees it while filling one model. */
interface Candidate {
  readonly id: string;
  readonly score: number;
  /** Layers of the current model it can still hold. */
  readonly cap: number;
}

const EPS = 1e-9;

/**
 * Plans every copy of every model (SPEC §2): copies of one model on disjoint nodes, layers
 * split so that each copy's slowest stage (layers / score) is as fast as memory allows, node
 * memory counted across every model. Deterministic; never returns a partial plan.
 *
 * @throws {PlanError} `InvalidInput` for bad profiles or models, `InsufficientCapacity`
 * naming the model and the shortfall when the swarm cannot hold every copy.
 * @example
 * const plan = planSwarm([{ id: 'gpu', memoryGb: 24, score: 10 }], { models: [{ id: 'base', layers: 12 }] });
 */
export function planSwarm(profiles: readonly NodeProfile[], config: PlanConfig): SwarmPlan {
  const issues = [...profileIssues(profiles), ...modelIssues(config?.models)];
  if (issues.length > 0) throw new PlanError('InvalidInput', issues.map((i) => i.message).join('; '));

  const freeGb = new Map<string, number>(profiles.map((p) => [p.id, p.memoryGb]));
  const models = config.models.map(copyModel);
  const pipelines: Pipeline[] = [];
  for (const model of models) {
    const layerGb = model.layerGb ?? 1;
    const candidates = profiles
      .map((p): Candidate => ({ id: p.id, score: p.score ?? 1, cap: Math.floor((freeGb.get(p.id) ?? 0) / layerGb + EPS) }))
      .filter((c) => c.cap > 0);
    const groups = partitionCopies(candidates, model);
    groups.forEach((group, copy) => {
      const stages = splitLayers(group, model.layers);
      for (const s of stages) freeGb.set(s.nodeId, (freeGb.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * layerGb);
      pipelines.push({ id: `${model.id}/${copy}`, modelId: model.id, stages });
    });
  }
  const plan: SwarmPlan = { models, pipelines };
  const invalid = validatePlan(plan, profiles);
  if (invalid.length > 0) {
    // A planner bug, not a user error: refuse rather than hand out a broken plan.
    throw new PlanError('InvalidPlan', `planner produced an invalid plan: ${invalid.map((i) => i.message).join('; ')}`);
  }
  return plan;
}

function copyModel(m: ModelSpec): ModelSpec {
  return JSON.parse(JSON.stringify(m)) as ModelSpec;
}

/** Orders candidates fastest first; more memory, then id, break ties. */
export function byCapability(a: Candidate, b: Candidate): number {
  return b.score - a.score || b.cap - a.cap || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * Deals candidates to `copies` disjoint groups: fastest first, each to the group with the least
 * capability so far, then moves or swaps memory-rich nodes until every group can hold the model,
 * then improves the total throughput Σ 1 / T by local search ({@link improvePartition}).
 */
function partitionCopies(candidates: readonly Candidate[], model: ModelSpec): Candidate[][] {
  const copies = model.pipelines ?? 1;
  const layers = model.layers;
  const totalCap = candidates.reduce((s, c) => s + Math.min(c.cap, layers), 0);
  const shortfall = (have: number) =>
    new PlanError(
      'InsufficientCapacity',
      `model "${model.id}" needs ${copies} disjoint ${copies === 1 ? 'copy' : 'copies'} of ${layers} layers ` +
        `(${copies * layers} layers of ${model.layerGb ?? 1} GB) but the free memory holds ${have}: short by ${copies * layers - have} layers`,
    );
  if (candidates.length < copies || totalCap < copies * layers) throw shortfall(Math.min(totalCap, copies * layers - 1));

  const sorted = [...candidates].sort(byCapability);
  const groups: Candidate[][] = Array.from({ length: copies }, () => []);
  const scoreSum = new Array<number>(copies).fill(0);
  const capSum = new Array<number>(copies).fill(0);
  for (const c of sorted) {
    let best = 0;
    for (let g = 1; g < copies; g++) {
      if ((scoreSum[g] ?? 0) < (scoreSum[best] ?? 0) - EPS || (Math.abs((scoreSum[g] ?? 0) - (scoreSum[best] ?? 0)) <= EPS && (capSum[g] ?? 0) < (capSum[best] ?? 0))) best = g;
    }
    groups[best]?.push(c);
    scoreSum[best] = (scoreSum[best] ?? 0) + c.score;
    capSum[best] = (capSum[best] ?? 0) + Math.min(c.cap, layers);
  }
  const capOf = (g: readonly Candidate[]) => g.reduce((s, c) => s + Math.min(c.cap, layers), 0);

  // Memory repair: each step strictly raises a deficit group's capacity without making a donor short.
  for (let guard = 0; guard < candidates.length * copies * 4; guard++) {
    const deficit = groups.findIndex((g) => capOf(g) < layers);
    if (deficit === -1) break;
    const need = groups[deficit] as Candidate[];
    let moved = false;
    // 1. Move the most memory-per-score node a donor can spare.
    let bestMove: { donor: number; index: number; ratio: number } | undefined;
    groups.forEach((donor, d) => {
      if (d === deficit) return;
      const surplus = capOf(donor) - layers;
      donor.forEach((c, index) => {
        const cap = Math.min(c.cap, layers);
        if (cap > surplus || donor.length === 1) return;
        const ratio = cap / c.score;
        if (bestMove === undefined || ratio > bestMove.ratio + EPS) bestMove = { donor: d, index, ratio };
      });
    });
    if (bestMove !== undefined) {
      const [c] = (groups[bestMove.donor] as Candidate[]).splice(bestMove.index, 1);
      if (c) need.push(c);
      moved = true;
    } else {
      // 2. Swap a small node of the deficit group for a bigger one the donor can spare.
      let bestSwap: { donor: number; a: number; b: number; gain: number } | undefined;
      groups.forEach((donor, d) => {
        if (d === deficit) return;
        const surplus = capOf(donor) - layers;
        need.forEach((a, ai) => {
          donor.forEach((b, bi) => {
            const gain = Math.min(b.cap, layers) - Math.min(a.cap, layers);
            if (gain <= 0 || gain > surplus) return;
            if (bestSwap === undefined || gain > bestSwap.gain) bestSwap = { donor: d, a: ai, b: bi, gain };
          });
        });
      });
      if (bestSwap !== undefined) {
        const donor = groups[bestSwap.donor] as Candidate[];
        const a = need[bestSwap.a] as Candidate;
        const b = donor[bestSwap.b] as Candidate;
        need[bestSwap.a] = b;
        donor[bestSwap.b] = a;
        moved = true;
      }
    }
    if (!moved) break;
  }
  const short = groups.findIndex((g) => capOf(g) < layers);
  if (short !== -1) throw shortfall(groups.reduce((s, g) => s + Math.min(capOf(g), layers), 0));
  return improvePartition(groups, layers).map((g) => [...g].sort(byCapability));
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
function improvePartition(start: readonly Candidate[][], layers: number): Candidate[][] {
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
 */
class WaterFill {
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

/**
 * Splits `layers` over the nodes of one copy so that the slowest stage (layers / score) is as
 * fast as possible within each node's capacity: water-filling, one layer at a time to the node
 * whose stage stays fastest. Nodes that receive no layer are not stages.
 */
export function splitLayers(group: readonly Candidate[], layers: number): Stage[] {
  const counts = new Array<number>(group.length).fill(0);
  for (let l = 0; l < layers; l++) {
    let best = -1;
    let bestTime = Infinity;
    for (let i = 0; i < group.length; i++) {
      const c = group[i] as Candidate;
      const n = counts[i] ?? 0;
      if (n >= c.cap) continue;
      const time = (n + 1) / c.score;
      if (time < bestTime - EPS) {
        best = i;
        bestTime = time;
      }
    }
    if (best === -1) throw new PlanError('InsufficientCapacity', `a copy ran out of memory at layer ${l} of ${layers}`);
    counts[best] = (counts[best] ?? 0) + 1;
  }
  const stages: Stage[] = [];
  let next = 0;
  group.forEach((c, i) => {
    const n = counts[i] ?? 0;
    if (n === 0) return;
    stages.push({ nodeId: c.id, layerStart: next, layerEnd: next + n });
    next += n;
  });
  return stages;
}
