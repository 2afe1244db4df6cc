/**
 * The moves of a rebalance, as the Swarm statechart carries them out (docs/rebalance.md
 * "Make-before-break"): data in its context, one phase per pending move, and the pure updates its
 * transitions assign. A move replaces copies of one model (`removes`) by new ones (`adds`) whose
 * nodes load spans first:
 *
 * - make-before-break (every loading node has memory for its new span beside what it serves):
 *   `loading` (the old copies serve; the new ones are not in the plan, so nothing routes to them)
 *   → every span loaded: the new copies join the plan and the old ones leave it in one transition
 *   (the new copy is routable before the old one stops) → `draining` (requests in flight on the
 *   old copies finish there) → drained: done, the old spans may be dropped;
 * - break-first (a loading node must drop its old span first): `draining` (the old copies leave
 *   the plan; requests in flight finish) → drained → `loading` → every span loaded: the new copies
 *   join the plan, done.
 *
 * A loading node that goes down or leaves aborts its move; a move whose old copies changed under
 * it (a retirement relocated them) or whose new copies would not validate is aborted when it
 * would form. Pure; no IO.
 */
import type { NodeProfile, Pipeline, SwarmPlan } from '../src/core/types.js';
import { validatePlan } from '../src/core/validate.js';

/** One move the Swarm is told to carry out (plain data; `hecate-swarm/rebalance` decides them). */
export interface MoveOrder {
  /** Unique among the pending moves. */
  readonly id: string;
  readonly modelId: string;
  /** The copies it replaces, as they are in the plan when it begins. */
  readonly removes: readonly Pipeline[];
  /** The copies it forms. */
  readonly adds: readonly Pipeline[];
  /** The nodes that load a span. */
  readonly loading: readonly string[];
  /** Whether the old copies stop before the spans load (a loading node has no memory for both). */
  readonly breakFirst: boolean;
}

/** A move's phase: its nodes are loading spans, or its old copies are draining. */
export type MovePhase = 'loading' | 'draining';

/** A pending move: its order, its phase and the nodes still loading. */
export interface PendingMove {
  readonly order: MoveOrder;
  readonly phase: MovePhase;
  /** Nodes whose span has not loaded yet (all of `order.loading` until each reports). */
  readonly waiting: readonly string[];
}

/** What a move transition decided: the next pending table, the plan, and what to tell. */
export interface MoveStep {
  readonly moves: ReadonlyMap<string, PendingMove>;
  readonly plan: SwarmPlan;
  /** The moves that formed their copies (their new copies joined the plan) in this step. */
  readonly formed: readonly string[];
  /** The moves that finished in this step. */
  readonly done: readonly string[];
  /** The moves aborted in this step, with why. */
  readonly aborted: readonly { readonly id: string; readonly reason: string }[];
}

const samePipeline = (a: Pipeline, b: Pipeline | undefined) =>
  b !== undefined && a.modelId === b.modelId && a.stages.length === b.stages.length && a.stages.every((s, i) => s.nodeId === b.stages[i]?.nodeId && s.layerStart === b.stages[i]?.layerStart && s.layerEnd === b.stages[i]?.layerEnd);

/** Why `orders` cannot begin on `plan` (a pending move, an unknown or changed copy, a dead or unknown node), or undefined. */
export function beginIssue(plan: SwarmPlan, pending: ReadonlyMap<string, PendingMove> | undefined, orders: readonly MoveOrder[], isAlive: (nodeId: string) => boolean): string | undefined {
  if (pending !== undefined && pending.size > 0) return `a rebalance is under way (${[...pending.keys()].join(', ')})`;
  if (!Array.isArray(orders as unknown) || orders.length === 0) return 'no move to begin';
  const ids = new Set<string>();
  const removed = new Set<string>();
  const byId = new Map(plan.pipelines.map((p) => [p.id, p] as const));
  for (const o of orders) {
    if (ids.has(o.id)) return `move "${o.id}" is listed twice`;
    ids.add(o.id);
    for (const p of o.removes) {
      if (!samePipeline(p, byId.get(p.id))) return `move "${o.id}": copy "${p.id}" is not in the plan as ordered`;
      if (removed.has(p.id)) return `move "${o.id}": copy "${p.id}" is replaced by two moves`;
      removed.add(p.id);
      if (!p.stages.every((s) => isAlive(s.nodeId))) return `move "${o.id}": copy "${p.id}" is not intact`;
    }
    for (const p of o.adds) {
      if (byId.has(p.id)) return `move "${o.id}": copy id "${p.id}" is taken`;
      for (const s of p.stages) if (!isAlive(s.nodeId)) return `move "${o.id}": node "${s.nodeId}" is not a live member`;
    }
  }
  return undefined;
}

function without(plan: SwarmPlan, ids: ReadonlySet<string>): SwarmPlan {
  return { models: plan.models, pipelines: plan.pipelines.filter((p) => !ids.has(p.id)) };
}

/** `rebalance.begin`: every move pending; a break-first move's old copies leave the plan at once (they drain). */
export function beginMoves(plan: SwarmPlan, orders: readonly MoveOrder[]): MoveStep {
  const moves = new Map<string, PendingMove>();
  const leaving = new Set<string>();
  for (const o of orders) {
    moves.set(o.id, { order: o, phase: o.breakFirst ? 'draining' : 'loading', waiting: [...new Set(o.loading)] });
    if (o.breakFirst) for (const p of o.removes) leaving.add(p.id);
  }
  return { moves, plan: leaving.size > 0 ? without(plan, leaving) : plan, formed: [], done: [], aborted: [] };
}

/** Forms a move's copies: the new copies join the plan (and, make-before-break, the old ones leave), if they validate. */
function form(plan: SwarmPlan, m: PendingMove, profiles: readonly NodeProfile[]): SwarmPlan | string {
  const o = m.order;
  if (!o.breakFirst) {
    const byId = new Map(plan.pipelines.map((p) => [p.id, p] as const));
    for (const p of o.removes) if (!samePipeline(p, byId.get(p.id))) return `copy "${p.id}" changed while its move loaded`;
  }
  const next: SwarmPlan = { models: plan.models, pipelines: [...without(plan, new Set(o.breakFirst ? [] : o.removes.map((p) => p.id))).pipelines, ...o.adds] };
  const issues = validatePlan(next, profiles);
  return issues.length > 0 ? `the new copies would not validate: ${issues.map((i) => i.message).join('; ')}` : next;
}

/** `span.loaded`: one node's span is in; the last one forms the move's copies. */
export function spanLoaded(plan: SwarmPlan, moves: ReadonlyMap<string, PendingMove>, moveId: string, nodeId: string, profiles: readonly NodeProfile[]): MoveStep {
  const m = moves.get(moveId) as PendingMove;
  const next = new Map(moves);
  const waiting = m.waiting.filter((id) => id !== nodeId);
  if (waiting.length > 0) {
    next.set(moveId, { ...m, waiting });
    return { moves: next, plan, formed: [], done: [], aborted: [] };
  }
  const formed = form(plan, m, profiles);
  if (typeof formed === 'string') {
    next.delete(moveId);
    return { moves: next, plan, formed: [], done: [], aborted: [{ id: moveId, reason: formed }] };
  }
  if (m.order.breakFirst) {
    next.delete(moveId);
    return { moves: next, plan: formed, formed: [moveId], done: [moveId], aborted: [] };
  }
  next.set(moveId, { ...m, waiting, phase: 'draining' });
  return { moves: next, plan: formed, formed: [moveId], done: [], aborted: [] };
}

/** `copy.drained`: the old copies' requests in flight are done; make-before-break finishes, break-first starts loading. */
export function copyDrained(plan: SwarmPlan, moves: ReadonlyMap<string, PendingMove>, moveId: string): MoveStep {
  const m = moves.get(moveId) as PendingMove;
  const next = new Map(moves);
  if (m.order.breakFirst) {
    next.set(moveId, { ...m, phase: 'loading' });
    return { moves: next, plan, formed: [], done: [], aborted: [] };
  }
  next.delete(moveId);
  return { moves: next, plan, formed: [], done: [moveId], aborted: [] };
}

/** The moves a node's loss aborts: those where it still has a span to load. */
export function abortMovesOf(moves: ReadonlyMap<string, PendingMove> | undefined, nodeId: string): MoveStep['aborted'] {
  const out: { id: string; reason: string }[] = [];
  for (const [id, m] of moves ?? []) if (m.waiting.includes(nodeId) || (m.phase === 'loading' && m.order.adds.some((p) => p.stages.some((s) => s.nodeId === nodeId)))) out.push({ id, reason: `node "${nodeId}" was lost while it loaded` });
  return out;
}

/** Whether `nodeId` still has a span to load for a pending move (routing never sends it a request for that copy: the copy is not in the plan). */
export function isLoading(moves: ReadonlyMap<string, PendingMove> | undefined, nodeId: string): boolean {
  for (const m of moves?.values() ?? []) if (m.phase === 'loading' && m.waiting.includes(nodeId)) return true;
  return false;
}
