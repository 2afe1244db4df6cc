/**
 * The rebalancer's decision (docs/rebalance.md "The rule"): given a plan and the members'
 * profiles, the moves that raise the plan's counted-once throughput (src/core/shared-throughput.ts)
 * — a copy re-split over its own nodes, copies re-formed on the union of their nodes and idle
 * nodes, a new copy formed on idle nodes — each priced by the spans it loads and the throughput
 * lost while they load, and made only when its gain passes the hysteresis. Pure and deterministic:
 * the same plan, profiles, telemetry and options give the same moves.
 */
import { describeValue } from '../core/describe.js';
import { PlanError, SwarmError } from '../core/errors.js';
import { layerFootprint } from '../core/plan-disjoint.js';
import { assertPlanShapeOnce } from '../core/plan-index.js';
import type { Candidate } from '../core/plan-search.js';
import { ownValue } from '../core/records.js';
import { sharedThroughput } from '../core/shared-throughput.js';
import type { IdSource, ModelSpec, NodeProfile, NodeStates, Pipeline, Stage, SwarmPlan } from '../core/types.js';
import { profileIssues } from '../core/validate.js';
import type { PlannedMove } from '../runtime/rebalance-hook.js';
import { loadSeconds, spanLoads, type SpanLoad } from './move-cost.js';
import { copyRate, regroupCopies, resplitCopy } from './regroup.js';
import { resolveRebalanceOptions, type RebalanceOptions, type ResolvedRebalanceOptions } from './rebalance-options.js';

/** What a move does: re-split one copy in place, re-form copies on other nodes, or form a new copy on idle nodes. */
export type MoveKind = 'resplit' | 'regroup' | 'form';

/** One move (plain data): the root's `PlannedMove`, with its kind. */
export interface RebalanceMove extends PlannedMove {
  readonly kind: MoveKind;
  readonly loads: readonly SpanLoad[];
}

/** What {@link proposeMoves} decided (plain data). */
export interface RebalanceProposal {
  /** The plan after every move, in order. */
  readonly plan: SwarmPlan;
  readonly moves: readonly RebalanceMove[];
  /** Σ of the moves' layers moved. */
  readonly layersMoved: number;
  /** Counted-once layer-passes per unit of time before and after, and the compute bound. */
  readonly before: number;
  readonly after: number;
  readonly bound: number;
  /** Rounds taken (the last found nothing, unless `maxRounds` stopped it). */
  readonly rounds: number;
}

const EPS = 1e-9;
/** Idle nodes a regroup may take, the fastest first (a bounded search). */
const IDLE_POOL = 12;
/** Moves through shared nodes priced on the whole plan per round, at most (each is two counted-once passes). */
const SHARED_CHECKS = 32;
/** Copies each of the worst is paired with, at least (the copies that waste the most compute). */
const PARTNERS = 32;

/** The plan as it changes move by move, with the per-node tables moves are priced from. */
class Workspace {
  readonly models: ReadonlyMap<string, ModelSpec>;
  readonly profiles = new Map<string, NodeProfile>();
  readonly pipelines = new Map<string, Pipeline>();
  readonly uses = new Map<string, Set<string>>();
  readonly usedGb = new Map<string, number>();

  constructor(
    plan: SwarmPlan,
    profiles: readonly NodeProfile[],
    private readonly nodes: NodeStates | undefined,
  ) {
    this.models = new Map(plan.models.map((m) => [m.id, m] as const));
    for (const p of profiles) this.profiles.set(p.id, p);
    for (const p of plan.pipelines) this.add(p);
  }

  score = (id: string): number => this.profiles.get(id)?.score ?? 1;
  /** Each copy's counted-once rate at the start of the round. */
  rates: ReadonlyMap<string, number> = new Map();

  /**
   * A node's speed for copies that replace `removes`: its score less what the copies it keeps
   * serving use of it at their counted-once rates (all of it on a node of its own).
   */
  speed(id: string, removes: ReadonlySet<string>): number {
    let used = 0;
    for (const q of this.uses.get(id) ?? []) {
      if (removes.has(q)) continue;
      const p = this.pipelines.get(q) as Pipeline;
      for (const s of p.stages) if (s.nodeId === id) used += (this.rates.get(q) ?? 0) * (s.layerEnd - s.layerStart);
    }
    return Math.max(this.score(id) - used, EPS);
  }
  alive(id: string): boolean {
    return this.profiles.has(id) && (this.nodes === undefined || ownValue(this.nodes, id)?.alive === true);
  }

  add(p: Pipeline): void {
    this.pipelines.set(p.id, p);
    const fp = layerFootprint(this.models.get(p.modelId) as ModelSpec);
    for (const s of p.stages) {
      (this.uses.get(s.nodeId) ?? this.uses.set(s.nodeId, new Set()).get(s.nodeId))?.add(p.id);
      this.usedGb.set(s.nodeId, (this.usedGb.get(s.nodeId) ?? 0) + (s.layerEnd - s.layerStart) * fp);
    }
  }

  remove(id: string): void {
    const p = this.pipelines.get(id);
    if (p === undefined) return;
    this.pipelines.delete(id);
    const fp = layerFootprint(this.models.get(p.modelId) as ModelSpec);
    for (const s of p.stages) {
      this.uses.get(s.nodeId)?.delete(id);
      this.usedGb.set(s.nodeId, (this.usedGb.get(s.nodeId) ?? 0) - (s.layerEnd - s.layerStart) * fp);
    }
  }

  plan(): SwarmPlan {
    return { models: [...this.models.values()], pipelines: [...this.pipelines.values()] };
  }

  /** Whether every node of `ids` serves nothing but the pipelines in `removes`. */
  exclusive(ids: Iterable<string>, removes: ReadonlySet<string>): boolean {
    for (const id of ids) for (const p of this.uses.get(id) ?? []) if (!removes.has(p)) return false;
    return true;
  }

  /** Memory free on a node once `removes` are gone, in GB. */
  freeGb(id: string, removes: readonly Pipeline[]): number {
    let free = (this.profiles.get(id)?.memoryGb ?? 0) - (this.usedGb.get(id) ?? 0);
    for (const p of removes) {
      const fp = layerFootprint(this.models.get(p.modelId) as ModelSpec);
      for (const s of p.stages) if (s.nodeId === id) free += (s.layerEnd - s.layerStart) * fp;
    }
    return free;
  }

  candidate(id: string, model: ModelSpec, removes: readonly Pipeline[], removeIds: ReadonlySet<string> = new Set(removes.map((p) => p.id))): Candidate {
    return { id, score: this.speed(id, removeIds), cap: Math.min(model.layers, Math.max(0, Math.floor(this.freeGb(id, removes) / layerFootprint(model) + EPS))) };
  }

  intact(p: Pipeline): boolean {
    return p.stages.every((s) => this.alive(s.nodeId));
  }
}

/**
 * The moves that raise `plan`'s counted-once throughput on `profiles`, round by round until none
 * passes (or `maxRounds`): each round prices every candidate move, then makes the most valuable
 * ones that share no node and no copy. A move passes when it raises the counted-once throughput of
 * the copies it replaces by at least `minGain` of theirs (a new copy on idle nodes: any gain) and
 * its value over the horizon is positive. Every move raises the plan's counted-once throughput, so
 * no sequence of moves can return to a plan it left, and right after a rebalance that ran to the
 * end a second one moves nothing. Only live members (`nodes`, when given) load spans, and only
 * intact copies move.
 *
 * @param ids mints the new copies' ids. @defaultValue `<model>/r<n>`, the first unused
 * @throws {PlanError} for a bad plan or profiles; {@link SwarmError} `InvalidInput` for bad options
 * @example proposeMoves(swarm.state().plan, profiles).moves
 */
export function proposeMoves(plan: SwarmPlan, profiles: readonly NodeProfile[], nodes?: NodeStates, options?: RebalanceOptions, ids?: IdSource): RebalanceProposal {
  assertPlanShapeOnce(plan);
  const issues = profileIssues(profiles);
  if (issues.length > 0) throw new PlanError('InvalidInput', `proposeMoves: ${issues.map((i) => i.message).join('; ')}`);
  if (ids !== undefined && typeof ids !== 'function') throw new SwarmError('InvalidInput', `proposeMoves: "ids" must be an id source (a function), got ${describeValue(ids)}`);
  const o = resolveRebalanceOptions(options);
  const ws = new Workspace(plan, profiles, nodes);
  const mint = ids ?? counterIds(ws);
  const start = sharedThroughput(plan, profiles);
  const moves: RebalanceMove[] = [];
  let rounds = 0;
  while (rounds < o.maxRounds) {
    rounds++;
    const made = round(ws, profiles, o, mint);
    moves.push(...made);
    if (made.length === 0) break;
  }
  const after = ws.plan();
  const end = moves.length === 0 ? start : sharedThroughput(after, profiles);
  return { plan: moves.length === 0 ? plan : after, moves, layersMoved: moves.reduce((n, m) => n + m.layersMoved, 0), before: start.layerRate, after: end.layerRate, bound: start.bound, rounds };
}

/** `<model>/r<n>`, skipping ids the plan uses. */
function counterIds(ws: Workspace): IdSource {
  let n = 0;
  return () => {
    let id: string;
    do id = `r${n++}`;
    while ([...ws.models.keys()].some((m) => ws.pipelines.has(`${m}/${id}`)));
    return id;
  };
}

/** One round: every candidate priced, then the most valuable non-overlapping ones made. */
function round(ws: Workspace, profiles: readonly NodeProfile[], o: ResolvedRebalanceOptions, mint: IdSource): RebalanceMove[] {
  const candidates: RebalanceMove[] = [];
  ws.rates = sharedThroughput(ws.plan(), profiles).copies;
  for (const model of ws.models.values()) candidates.push(...modelCandidates(ws, model, o));
  candidates.sort((a, b) => b.value - a.value || a.layersMoved - b.layersMoved || keyOf(a).localeCompare(keyOf(b)));
  const takenNodes = new Set<string>();
  const made: RebalanceMove[] = [];
  let checks = 0;
  for (const candidate of candidates) {
    const touched = touchedNodes(candidate);
    if (touched.some((id) => takenNodes.has(id))) continue;
    let c: RebalanceMove | undefined = candidate;
    // A node shared with other copies: the estimate ranked it; the whole plan's figure, as it is now, decides.
    if (!ws.exclusive(touched, new Set(c.removes))) {
      if (checks >= SHARED_CHECKS) continue;
      checks++;
      c = checkShared(ws, c, profiles, o);
      if (c === undefined) continue;
    }
    for (const id of touched) takenNodes.add(id);
    const named = c.adds.map((p) => ({ ...p, id: `${p.modelId}/${mint()}` }));
    const rename = new Map(c.adds.map((p, i) => [p.id, (named[i] as Pipeline).id] as const));
    for (const id of c.removes) ws.remove(id);
    for (const p of named) ws.add(p);
    made.push({ ...c, adds: named, loads: c.loads.map((l) => ({ ...l, pipelineId: rename.get(l.pipelineId) ?? l.pipelineId })) });
  }
  return made;
}

function keyOf(m: RebalanceMove): string {
  return `${m.modelId}|${m.removes.join(',')}|${m.adds.map((p) => p.stages.map((s) => s.nodeId).join('.')).join(',')}`;
}

/** The nodes each candidate touches (its replaced copies' and its new copies'), kept when it is priced. */
const touchedBy = new WeakMap<RebalanceMove, readonly string[]>();

function touchedNodes(m: RebalanceMove): readonly string[] {
  return touchedBy.get(m) ?? [];
}

/** Every candidate move of one model this round, priced; only those that pass. */
function modelCandidates(ws: Workspace, model: ModelSpec, o: ResolvedRebalanceOptions): RebalanceMove[] {
  const copies = [...ws.pipelines.values()].filter((p) => p.modelId === model.id && ws.intact(p)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rate = ws.rates;
  const slack = (p: Pipeline) => p.stages.reduce((s, st) => s + ws.score(st.nodeId), 0) - (rate.get(p.id) ?? 0) * model.layers;
  const idle = [...ws.profiles.keys()]
    .filter((id) => ws.alive(id) && (ws.uses.get(id)?.size ?? 0) === 0)
    .map((id) => ws.candidate(id, model, []))
    .filter((c) => c.cap > 0)
    .sort((a, b) => b.score - a.score || b.cap - a.cap || (a.id < b.id ? -1 : 1))
    .slice(0, IDLE_POOL);
  const out: RebalanceMove[] = [];
  const consider = (kind: MoveKind, removes: readonly Pipeline[], stages: readonly Stage[][]) => {
    const m = price(ws, model, kind, removes, stages, o);
    if (m !== undefined) out.push(m);
  };
  const pool = (removes: readonly Pipeline[]) => {
    const own = new Set<string>();
    for (const p of removes) for (const s of p.stages) own.add(s.nodeId);
    const removeIds = new Set(removes.map((p) => p.id));
    return [...[...own].map((id) => ws.candidate(id, model, removes, removeIds)), ...idle.filter((c) => !own.has(c.id))];
  };
  for (const p of copies) {
    if (slack(p) <= EPS * model.layers) continue;
    const stages = resplitCopy(pool([p]).filter((c) => p.stages.some((s) => s.nodeId === c.id)), model);
    if (stages !== undefined) consider('resplit', [p], [stages]);
  }
  const bySlack = [...copies].sort((a, b) => slack(b) - slack(a) || (a.id < b.id ? -1 : 1));
  const worst = bySlack.slice(0, o.worstCopies).filter((p) => slack(p) > EPS * model.layers);
  // Partners: every copy of a small model, else the copies that waste the most compute.
  const partners = bySlack.slice(0, Math.max(PARTNERS, 4 * o.worstCopies));
  const paired = new Set<string>();
  for (const w of worst) {
    if (idle.length > 0) consider('regroup', [w], regroupCopies(pool([w]), model));
    for (const q of partners) {
      if (q === w) continue;
      const key = w.id < q.id ? `${w.id}\u0000${q.id}` : `${q.id}\u0000${w.id}`;
      if (paired.has(key)) continue;
      paired.add(key);
      consider('regroup', [w, q], regroupCopies(pool([w, q]), model));
    }
  }
  if (idle.length > 0) for (const stages of regroupCopies(idle, model)) consider('form', [], [stages]);
  return out;
}

/**
 * The move that replaces `removes` by copies of `stages`, priced; undefined unless it passes. Its
 * gain is exact when its nodes serve nothing else (copies on nodes of their own run at 1 / their
 * slowest stage); otherwise an estimate as if they did, which {@link checkShared} replaces by the
 * whole plan's counted-once figure before the move is made.
 */
function price(ws: Workspace, model: ModelSpec, kind: MoveKind, removes: readonly Pipeline[], stages: readonly Stage[][], o: ResolvedRebalanceOptions): RebalanceMove | undefined {
  if (stages.length === 0) return undefined;
  const adds: Pipeline[] = stages.map((s, i) => ({ id: `\u0000new${i}`, modelId: model.id, stages: s }));
  const touched = new Set<string>();
  for (const p of [...removes, ...adds]) for (const s of p.stages) touched.add(s.nodeId);
  const removeIds = new Set(removes.map((p) => p.id));
  const speed = (id: string) => ws.speed(id, removeIds);
  const replaced = removes.reduce((s, p) => s + (ws.rates.get(p.id) ?? 0), 0) * model.layers;
  const gain = adds.reduce((s, p) => s + copyRate(p.stages, speed), 0) * model.layers - replaced;
  const move = priced(ws, model, kind, removes, adds, gain, replaced, o);
  if (move !== undefined) touchedBy.set(move, [...touched]);
  return move;
}

/** A move with a node shared with other copies, priced again on the whole plan as it is now; undefined unless it still passes. */
function checkShared(ws: Workspace, m: RebalanceMove, profiles: readonly NodeProfile[], o: ResolvedRebalanceOptions): RebalanceMove | undefined {
  const removeIds = new Set(m.removes);
  const removes = m.removes.map((id) => ws.pipelines.get(id)).filter((p): p is Pipeline => p !== undefined);
  if (removes.length !== m.removes.length) return undefined;
  const now = sharedThroughput(ws.plan(), profiles);
  const next = sharedThroughput({ models: [...ws.models.values()], pipelines: [...[...ws.pipelines.values()].filter((p) => !removeIds.has(p.id)), ...m.adds] }, profiles);
  const model = ws.models.get(m.modelId) as ModelSpec;
  const replaced = removes.reduce((s, p) => s + (now.copies.get(p.id) ?? 0), 0) * model.layers;
  return priced(ws, model, m.kind, removes, m.adds, next.layerRate - now.layerRate, replaced, o);
}

/** The move with its price, or undefined unless its gain passes the hysteresis and its value is positive. */
function priced(ws: Workspace, model: ModelSpec, kind: MoveKind, removes: readonly Pipeline[], adds: readonly Pipeline[], gain: number, replaced: number, o: ResolvedRebalanceOptions): RebalanceMove | undefined {
  if (!(gain > EPS * Math.max(1, replaced)) || gain < o.minGain * replaced) return undefined;
  const loads = spanLoads(model, removes, adds, ws.profiles, o.loadGbPerSecond);
  const layersMoved = loads.reduce((n, l) => n + l.layerEnd - l.layerStart, 0);
  if (layersMoved === 0) return undefined;
  const seconds = loadSeconds(loads);
  const fp = layerFootprint(model);
  const loading = new Map<string, number>();
  for (const l of loads) loading.set(l.nodeId, (loading.get(l.nodeId) ?? 0) + (l.layerEnd - l.layerStart) * fp);
  const dropsFirst = [...loading].filter(([id, gb]) => gb > (ws.profiles.get(id)?.memoryGb ?? 0) - (ws.usedGb.get(id) ?? 0) + EPS).map(([id]) => id).sort();
  const stopped = removes.filter((p) => p.stages.some((s) => dropsFirst.includes(s.nodeId)));
  const lost = stopped.reduce((s, p) => s + copyRate(p.stages, ws.score), 0) * model.layers * seconds;
  const value = gain * Math.max(0, o.horizonSeconds - seconds) - lost;
  if (!(value > 0)) return undefined;
  return { kind, modelId: model.id, removes: removes.map((p) => p.id), adds, loads, dropsFirst, layersMoved, gain, replaced, loadSeconds: seconds, lost, value };
}
