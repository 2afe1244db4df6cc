import { and, assign, createActor, enqueueActions, sendTo, setup, stopChild, type ActorRefFrom, type AnyActorRef } from 'xstate';
import { resolveRequest, type ExtraLoad } from '../src/core/cost.js';
import { RoutingError } from '../src/core/errors.js';
import { failoverInSwarm } from '../src/core/failover.js';
import { deepFreeze } from '../src/core/freeze.js';
import { makeRoute } from '../src/core/route.js';
import { nextSeededId } from '../src/core/seeded-id.js';
import { serveModel } from '../src/core/serve.js';
import { declaredTelemetry, planNodeIds } from '../src/core/state.js';
import { planGrowth, planRetirement } from '../src/core/telomerase.js';
import type { GrowthRole, IdSource, NodeProfile, NodeStates, NodeTelemetry, Pipeline, Recovery, Relocation, Route, SwarmPlan } from '../src/core/types.js';
import { profileIssues, validatePlan } from '../src/core/validate.js';
import { nodeMachine } from './node.machine.js';

/** A node actor of the Swarm. */
export type NodeActorRef = ActorRefFrom<typeof nodeMachine>;

/** The rescue `node.down` computes before the node is marked (the runtime adds the status). */
export interface PendingRescue {
  readonly nodeId: string;
  readonly recoveries: readonly Recovery[];
  readonly unrecoverable: readonly string[];
}

/**
 * What the last event the Swarm took decided, read from the snapshot after the event:
 * `rescue` after `node.down`, `revival` after `node.alive`, `growth` after `node.added`,
 * `retirement` after `node.removed` (both with the plan they adopted), `refused` when the
 * telomerase proposed a plan that does not validate (nothing else changed).
 */
export type SwarmOutcome =
  | ({ readonly kind: 'rescue' } & PendingRescue)
  | { readonly kind: 'revival'; readonly nodeId: string }
  | {
      readonly kind: 'growth';
      readonly nodeId: string;
      readonly profile: NodeProfile;
      readonly role: GrowthRole;
      readonly modelId?: string;
      readonly pipelines: readonly string[];
      readonly replaced: readonly string[];
      readonly plan: SwarmPlan;
    }
  | { readonly kind: 'retirement'; readonly nodeId: string; readonly relocated: readonly Relocation[]; readonly dropped: readonly string[]; readonly plan: SwarmPlan }
  | { readonly kind: 'refused'; readonly event: 'node.added' | 'node.removed'; readonly nodeId: string; readonly reason: string };

/**
 * The runtime's per-model routing index, for the default request: what a model serves now and
 * the copy a failover of a node would take, each chosen exactly as the scan would choose it.
 */
export interface RescueIndex {
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
  bestWithout(modelId: string, nodeId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
}

/**
 * What the Swarm actor is created with. Built from public functions alone:
 * `{ plan: planSwarm(profiles, config), profiles, telemetry: SwarmState.fromProfiles(plan, profiles).nodes }`.
 */
export interface SwarmInput {
  readonly plan: SwarmPlan;
  /** Every member, plan nodes and spares. */
  readonly profiles: readonly NodeProfile[];
  /**
   * The telemetry costs are read from (latency, load, score). A node marked `alive: false` here
   * starts down; after that, liveness is the machine's own. The runtime passes its live table.
   * @defaultValue each profile's declared telemetry
   */
  readonly telemetry?: NodeStates;
  /** @defaultValue 0.3 */
  readonly alpha?: number;
  /** @defaultValue true */
  readonly allowDegraded?: boolean;
  /** Seeds the pipeline ids the telomerase mints, from a state kept in context. @defaultValue 0 */
  readonly idSeed?: number;
  /** Mints pipeline ids instead of `idSeed` (not reproducible under pure `transition()` unless it is). */
  readonly idSource?: IdSource;
  /** In-flight load per node, read like `telemetry`. */
  readonly inflight?: ExtraLoad;
  /** The routing index over `telemetry` and `inflight`; without it, rescues scan. */
  readonly index?: RescueIndex;
}

/** One member of the swarm: its profile, its slot in `alive`, its actor. */
export interface Member {
  readonly profile: NodeProfile;
  readonly slot: number;
  readonly ref: NodeActorRef;
}

/** The Swarm's context. Counters make every guard O(1). */
export interface SwarmContext {
  readonly plan: SwarmPlan;
  /** Every member by id, in the order they joined. */
  readonly members: ReadonlyMap<string, Member>;
  /**
   * Alive (1) or down (0) per slot: the parent's own liveness of its children, the one the rescue
   * and the telomerase see. A byte array, because a mark copies it (copy-on-write keeps every
   * snapshot immutable): 8,000 bytes copy in about a microsecond.
   */
  readonly alive: Uint8Array;
  /** Slots of removed members, reused by the next newcomers. */
  readonly freeSlots: readonly number[];
  /** The nodes the current plan uses. */
  readonly inPlan: ReadonlySet<string>;
  readonly aliveCount: number;
  /** Nodes of the current plan that are down. */
  readonly planDownCount: number;
  readonly alpha: number;
  readonly allowDegraded: boolean;
  /** Each model's wanted number of copies, from the plan's models. */
  readonly wanted: ReadonlyMap<string, number>;
  /** The seeded id generator's state. */
  readonly idState: number;
  readonly idSource: IdSource | undefined;
  readonly telemetry: NodeStates;
  readonly inflight: ExtraLoad;
  readonly index: RescueIndex | undefined;
  /** What the last event taken decided. */
  readonly outcome: SwarmOutcome | undefined;
}

/** The events of the Swarm statechart. */
export type SwarmEvent =
  | { readonly type: 'node.down'; readonly nodeId: string }
  | { readonly type: 'node.alive'; readonly nodeId: string }
  | { readonly type: 'node.added'; readonly profile: NodeProfile }
  | { readonly type: 'node.removed'; readonly nodeId: string }
  | { readonly type: 'swarm.stop' };

/** Whether `nodeId` is a member of the swarm. */
export function isMember(context: Pick<SwarmContext, 'members'>, nodeId: string): boolean {
  return context.members.has(nodeId);
}

/** Whether a member node is alive in the Swarm's own liveness (false for a stranger). */
export function isAliveIn(context: Pick<SwarmContext, 'members' | 'alive'>, nodeId: string): boolean {
  const m = context.members.get(nodeId);
  return m !== undefined && context.alive[m.slot] === 1;
}

/** Every member's liveness, in join order. */
export function aliveMembers(context: Pick<SwarmContext, 'members' | 'alive'>): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const [id, m] of context.members) out.set(id, context.alive[m.slot] === 1);
  return out;
}

/**
 * Why `profile` cannot join: `InvalidInput` for a bad profile, `DuplicateNode` for a member's id;
 * undefined when it can. The `node.added` guard and the runtime's error both come from here.
 */
export function joinIssue(context: Pick<SwarmContext, 'members'>, profile: NodeProfile): { readonly code: 'InvalidInput' | 'DuplicateNode'; readonly message: string } | undefined {
  const issues = profileIssues([profile]);
  if (issues.length > 0) return { code: 'InvalidInput', message: `cannot add node: ${issues.map((i) => i.message).join('; ')}` };
  if (context.members.has(profile.id)) return { code: 'DuplicateNode', message: `node "${profile.id}" is already in the swarm; remove it first or use another id` };
  return undefined;
}

function countPlanDown(plan: SwarmPlan, context: Pick<SwarmContext, 'members' | 'alive'>): { inPlan: ReadonlySet<string>; planDownCount: number } {
  const inPlan = new Set(planNodeIds(plan));
  let planDownCount = 0;
  for (const id of inPlan) if (!isAliveIn(context, id)) planDownCount++;
  return { inPlan, planDownCount };
}

/** A copy of `alive` with one slot set: copy-on-write keeps every snapshot immutable. */
function withSlot(alive: Uint8Array, i: number, value: 0 | 1): Uint8Array {
  const next = new Uint8Array(alive.length > i ? alive.length : i + 1);
  next.set(alive);
  next[i] = value;
  return next;
}

/** For each plan (immutable, so the cache never goes stale): node id → the models whose pipelines use it. */
const modelsByNode = new WeakMap<SwarmPlan, ReadonlyMap<string, ReadonlySet<string>>>();

function modelsUsing(plan: SwarmPlan, nodeId: string): ReadonlySet<string> | undefined {
  let index = modelsByNode.get(plan);
  if (index === undefined) {
    const map = new Map<string, Set<string>>();
    for (const p of plan.pipelines) {
      for (const s of p.stages) {
        let models = map.get(s.nodeId);
        if (models === undefined) map.set(s.nodeId, (models = new Set()));
        models.add(p.modelId);
      }
    }
    modelsByNode.set(plan, map);
    index = map;
  }
  return index.get(nodeId);
}

const COLD: NodeTelemetry = Object.freeze({ alive: true, samples: 0 });

/** A node's entry of a telemetry table, own keys only (an id such as `toString` is no method). */
function entryOf(table: NodeStates, nodeId: string): NodeTelemetry | undefined {
  return Object.prototype.hasOwnProperty.call(table, nodeId) ? table[nodeId] : undefined;
}

/**
 * The telemetry the core sees: each member's measured values with the machine's own liveness.
 * A null-prototype record, so an id such as `__proto__` is an ordinary key.
 */
export function livenessView(context: Pick<SwarmContext, 'members' | 'alive' | 'telemetry'>, extra?: NodeProfile): NodeStates {
  const view: Record<string, NodeTelemetry> = Object.create(null) as Record<string, NodeTelemetry>;
  for (const [id, m] of context.members) {
    const t = entryOf(context.telemetry, id) ?? COLD;
    const alive = context.alive[m.slot] === 1;
    view[id] = t.alive === alive ? t : { ...t, alive };
  }
  if (extra !== undefined) view[extra.id] = declaredTelemetry(extra);
  return view;
}

/** Every stage of a pipeline alive in the machine's own liveness. */
function intactIn(context: SwarmContext, pipeline: Pipeline): boolean {
  for (const s of pipeline.stages) if (!isAliveIn(context, s.nodeId)) return false;
  return true;
}

/**
 * The rescue for `nodeId`, from the machine's context as it is: for every model whose served
 * route uses the node, its failover (intact copy → splice → degraded → Unrecoverable). Liveness
 * is the machine's own, so it must run before `markNodeDown`: once the node is marked, the route
 * that used it is no longer served and there is nothing left to rescue.
 * A model none of whose pipelines uses the node is skipped without routing it: whatever it
 * serves (a copy, a splice or the survivors of a copy) is made of its own pipelines' nodes.
 */
export function computeRescue(context: SwarmContext, nodeId: string): PendingRescue {
  const r = resolveRequest({});
  const recoveries: Recovery[] = [];
  const unrecoverable: string[] = [];
  const models = modelsUsing(context.plan, nodeId);
  if (models === undefined) return { nodeId, recoveries, unrecoverable };
  let state: { plan: SwarmPlan; nodes: NodeStates } | undefined;
  for (const model of context.plan.models) {
    if (!models.has(model.id)) continue;
    // The common case, from the index in O(log P): the model serves an intact copy, and another
    // intact copy without the node exists, both intact in the machine's own liveness. The same
    // choice and cost as the scan below (cost does not depend on liveness).
    const served = context.index?.best(model.id);
    if (served !== undefined && intactIn(context, served.pipeline)) {
      if (!served.pipeline.stages.some((s) => s.nodeId === nodeId)) continue;
      const copy = context.index?.bestWithout(model.id, nodeId);
      if (copy !== undefined && intactIn(context, copy.pipeline)) {
        const from = makeRoute(model.id, served.pipeline.id, served.pipeline.stages, context.telemetry, r, false, context.inflight);
        const route = makeRoute(model.id, copy.pipeline.id, copy.pipeline.stages, context.telemetry, r, false, context.inflight);
        recoveries.push({ modelId: model.id, strategy: 'copy', degraded: false, route, from, replaced: [], missingLayers: [] });
        continue;
      }
    }
    state ??= { plan: context.plan, nodes: livenessView(context) };
    let current: Route;
    try {
      current = serveModel(model.id, r, state, { allowDegraded: context.allowDegraded, extra: context.inflight });
    } catch {
      continue; // nothing was being served for this model: nothing to rescue
    }
    if (!current.stages.some((s) => s.nodeId === nodeId)) continue;
    try {
      recoveries.push(failoverInSwarm(current, nodeId, state, { allowDegraded: context.allowDegraded }, context.inflight));
    } catch (error) {
      if (!(error instanceof RoutingError) || error.code !== 'Unrecoverable') throw error;
      unrecoverable.push(model.id);
    }
  }
  return { nodeId, recoveries, unrecoverable };
}

/** An id source over the context's seeded state (or its `idSource`), and the state it ends in. */
function minter(context: SwarmContext): { next: IdSource; state: () => number } {
  if (context.idSource !== undefined) return { next: context.idSource, state: () => context.idState };
  let state = context.idState;
  return {
    next: () => {
      const [id, after] = nextSeededId(state);
      state = after;
      return id;
    },
    state: () => state,
  };
}

function profilesOf(context: SwarmContext): NodeProfile[] {
  const out: NodeProfile[] = [];
  for (const m of context.members.values()) out.push(m.profile);
  return out;
}

const issuesText = (issues: readonly { message: string }[]) => issues.map((i) => i.message).join('; ');

/**
 * The Swarm: its states are the swarm's status. `node.down` runs `computeRescue` and only then
 * `markNodeDown`, so the failover knows what was lost, not only that something is missing.
 * `node.added` and `node.removed` ask the telomerase (`planGrowth`, `planRetirement`) for the
 * new plan from the machine's own liveness, and adopt it. Status follows from counters through
 * eventless transitions: failed ⇔ zero nodes alive; degraded ⇔ some node of the plan down;
 * healthy otherwise.
 */
export const swarmMachine = setup({
  types: {
    context: {} as SwarmContext,
    events: {} as SwarmEvent,
    input: {} as SwarmInput,
  },
  guards: {
    isAliveMember: ({ context, event }) => 'nodeId' in event && isAliveIn(context, event.nodeId),
    isDownMember: ({ context, event }) => 'nodeId' in event && isMember(context, event.nodeId) && !isAliveIn(context, event.nodeId),
    canJoin: ({ context, event }) => event.type === 'node.added' && joinIssue(context, event.profile) === undefined,
    isMember: ({ context, event }) => 'nodeId' in event && isMember(context, event.nodeId),
    noneAlive: ({ context }) => context.aliveCount === 0,
    someAlive: ({ context }) => context.aliveCount > 0,
    somePlanNodeDown: ({ context }) => context.planDownCount > 0,
    allPlanNodesAlive: ({ context }) => context.planDownCount === 0,
  },
  actions: {
    computeRescue: assign({
      outcome: ({ context, event }) => (event.type === 'node.down' ? deepFreeze({ kind: 'rescue' as const, ...computeRescue(context, event.nodeId) }) : context.outcome),
    }),
    markNodeDown: assign(({ context, event }) => {
      if (event.type !== 'node.down') return {};
      const m = context.members.get(event.nodeId) as Member;
      return {
        alive: withSlot(context.alive, m.slot, 0),
        aliveCount: context.aliveCount - 1,
        planDownCount: context.planDownCount + (context.inPlan.has(event.nodeId) ? 1 : 0),
      };
    }),
    markNodeAlive: assign(({ context, event }) => {
      if (event.type !== 'node.alive') return {};
      const m = context.members.get(event.nodeId) as Member;
      return {
        alive: withSlot(context.alive, m.slot, 1),
        aliveCount: context.aliveCount + 1,
        planDownCount: context.planDownCount - (context.inPlan.has(event.nodeId) ? 1 : 0),
        outcome: { kind: 'revival' as const, nodeId: event.nodeId },
      };
    }),
    tellNodeDown: sendTo(({ context, event }) => (context.members.get((event as { nodeId: string }).nodeId) as Member).ref, { type: 'node.down' }),
    tellNodeAlive: sendTo(({ context, event }) => (context.members.get((event as { nodeId: string }).nodeId) as Member).ref, { type: 'node.alive' }),
    // The telomerase, from the machine's own liveness; a plan that would not validate is refused.
    decideGrowth: assign(({ context, event }) => {
      if (event.type !== 'node.added') return {};
      const profile = deepFreeze({ ...event.profile });
      const profiles = [...profilesOf(context), profile];
      const ids = minter(context);
      const decision = planGrowth(context.plan, profiles, livenessView(context, profile), profile, context.wanted, ids.next);
      const issues = validatePlan(decision.plan, profiles);
      if (issues.length > 0) {
        return { outcome: { kind: 'refused' as const, event: event.type, nodeId: profile.id, reason: `refused a plan change that would not validate: ${issuesText(issues)}` } };
      }
      const { plan, role, modelId, pipelines, replaced } = decision;
      return {
        idState: ids.state(),
        outcome: deepFreeze({ kind: 'growth' as const, nodeId: profile.id, profile, role, ...(modelId !== undefined ? { modelId } : {}), pipelines, replaced, plan }),
      };
    }),
    spawnNode: assign(({ context, self }) => {
      const o = context.outcome;
      if (o?.kind !== 'growth') return {};
      const free = context.freeSlots;
      const slot = free.length > 0 ? (free[free.length - 1] as number) : context.alive.length;
      const members = new Map(context.members).set(o.nodeId, { profile: o.profile, slot, ref: createNodeActor(self, o.profile, context.alpha) });
      return { members, freeSlots: free.length > 0 ? free.slice(0, -1) : free, alive: withSlot(context.alive, slot, 1), aliveCount: context.aliveCount + 1 };
    }),
    startNode: ({ context }) => {
      const o = context.outcome;
      if (o?.kind === 'growth') context.members.get(o.nodeId)?.ref.start();
    },
    decideRetirement: assign(({ context, event }) => {
      if (event.type !== 'node.removed') return {};
      const profiles = profilesOf(context);
      const decision = planRetirement(context.plan, profiles, livenessView(context), event.nodeId);
      const issues = validatePlan(decision.plan, profiles.filter((p) => p.id !== event.nodeId));
      if (issues.length > 0) {
        return { outcome: { kind: 'refused' as const, event: event.type, nodeId: event.nodeId, reason: `refused a plan change that would not validate: ${issuesText(issues)}` } };
      }
      return { outcome: deepFreeze({ kind: 'retirement' as const, nodeId: event.nodeId, relocated: decision.relocated, dropped: decision.dropped, plan: decision.plan }) };
    }),
    // Stopped, not retired: a node actor reaching its final state would send the Swarm an
    // `xstate.done.actor.node:<id>` event, and XState caches transitions per event type on the
    // shared machine, for ever — one entry per id ever removed.
    stopNode: stopChild(({ context, event }) => (event.type === 'node.removed' && context.outcome?.kind === 'retirement' ? context.members.get(event.nodeId)?.ref : undefined) as AnyActorRef),
    forgetNode: assign(({ context, event }) => {
      if (event.type !== 'node.removed' || context.outcome?.kind !== 'retirement') return {};
      const m = context.members.get(event.nodeId) as Member;
      const members = new Map(context.members);
      members.delete(event.nodeId);
      const wasAlive = context.alive[m.slot] === 1;
      return { members, freeSlots: [...context.freeSlots, m.slot], alive: withSlot(context.alive, m.slot, 0), aliveCount: context.aliveCount - (wasAlive ? 1 : 0) };
    }),
    adoptPlan: assign(({ context }) => {
      const o = context.outcome;
      if (o?.kind !== 'growth' && o?.kind !== 'retirement') return {};
      return { plan: o.plan, ...countPlanDown(o.plan, context) };
    }),
    startNodes: ({ context }) => {
      for (const m of context.members.values()) m.ref.start();
    },
    // One pass, O(N); stopped rather than retired, for the reason given at `stopNode`.
    stopNodes: enqueueActions(({ context, enqueue }) => {
      for (const m of context.members.values()) enqueue.stopChild(m.ref);
    }),
  },
}).createMachine({
  id: 'swarm',
  context: ({ input, self }) => {
    const alpha = input.alpha ?? 0.3;
    const telemetry: NodeStates = input.telemetry ?? declaredTable(input.profiles);
    const members = new Map<string, Member>();
    const alive = new Uint8Array(input.profiles.length);
    let aliveCount = 0;
    // Node actors live in this keyed collection, in the Swarm's actor system (so inspection sees
    // them) but not in its snapshot's children: xstate 5.33 spawns and stops children in O(N²).
    input.profiles.forEach((p, i) => {
      const profile = deepFreeze({ ...p });
      members.set(p.id, { profile, slot: i, ref: createNodeActor(self, profile, alpha) });
      if (entryOf(telemetry, p.id)?.alive !== false) {
        alive[i] = 1;
        aliveCount++;
      }
    });
    const plan = deepFreeze(input.plan);
    return {
      plan,
      members,
      alive,
      freeSlots: [],
      ...countPlanDown(plan, { members, alive }),
      aliveCount,
      alpha,
      allowDegraded: input.allowDegraded ?? true,
      wanted: new Map(plan.models.map((m) => [m.id, m.pipelines ?? 1])),
      idState: (input.idSeed ?? 0) >>> 0,
      idSource: input.idSource,
      telemetry,
      inflight: input.inflight ?? {},
      index: input.index,
      outcome: undefined,
    };
  },
  on: {
    'node.down': { guard: 'isAliveMember', actions: ['computeRescue', 'markNodeDown', 'tellNodeDown'] },
    'node.alive': { guard: 'isDownMember', actions: ['markNodeAlive', 'tellNodeAlive'] },
    'node.added': { guard: 'canJoin', actions: ['decideGrowth', 'spawnNode', 'startNode', 'adoptPlan'] },
    'node.removed': { guard: 'isMember', actions: ['decideRetirement', 'stopNode', 'forgetNode', 'adoptPlan'] },
  },
  entry: 'startNodes',
  initial: 'healthy',
  states: {
    healthy: {
      always: [
        { guard: 'noneAlive', target: 'failed' },
        { guard: 'somePlanNodeDown', target: 'degraded' },
      ],
      on: { 'swarm.stop': 'stopped' },
    },
    degraded: {
      always: [
        { guard: 'noneAlive', target: 'failed' },
        { guard: 'allPlanNodesAlive', target: 'healthy' },
      ],
      on: { 'swarm.stop': 'stopped' },
    },
    failed: {
      always: [
        { guard: and(['someAlive', 'allPlanNodesAlive']), target: 'healthy' },
        { guard: 'someAlive', target: 'degraded' },
      ],
      on: { 'swarm.stop': 'stopped' },
    },
    stopped: { type: 'final', entry: 'stopNodes' },
  },
});

/** Each profile's declared telemetry, as a null-prototype record. */
function declaredTable(profiles: readonly NodeProfile[]): NodeStates {
  const table: Record<string, NodeTelemetry> = Object.create(null) as Record<string, NodeTelemetry>;
  for (const p of profiles) table[p.id] = Object.freeze(declaredTelemetry(p));
  return table;
}

/** A node actor in the Swarm's system, not yet started (the Swarm starts it in an action). */
function createNodeActor(parent: AnyActorRef, p: NodeProfile, alpha: number): NodeActorRef {
  return createActor(nodeMachine, { parent, id: `node:${p.id}`, input: { id: p.id, alpha, ...declared(p) } });
}

function declared(p: NodeProfile): { latencyMs?: number; score?: number } {
  return { ...(p.latencyMs !== undefined ? { latencyMs: p.latencyMs } : {}), ...(p.score !== undefined ? { score: p.score } : {}) };
}
