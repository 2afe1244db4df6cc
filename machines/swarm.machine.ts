import { and, assign, createActor, emit, sendTo, setup, type ActorRefFrom, type AnyActorRef } from 'xstate';
import { failoverInSwarm } from '../src/core/failover.js';
import { RoutingError } from '../src/core/errors.js';
import { resolveRequest, type ExtraLoad } from '../src/core/cost.js';
import { makeRoute } from '../src/core/route.js';
import { serveModel } from '../src/core/serve.js';
import { planNodeIds } from '../src/core/state.js';
import type { NodeProfile, NodeStates, Pipeline, Recovery, Route, SwarmPlan } from '../src/core/types.js';
import { ejectionRoom, resolveEjectionOptions, type EjectionOptions, type ResolvedEjectionOptions } from '../src/core/ejection.js';
import type { PhiOptions } from '../src/core/phi.js';
import { nodeMachine, type AliveCause, type DownCause } from './node.machine.js';

/** A node actor spawned by the Swarm. */
export type NodeActorRef = ActorRefFrom<typeof nodeMachine>;

/** The rescue computed by `node.down` before the node is marked (status is added by the runtime). */
export interface PendingRescue {
  readonly nodeId: string;
  readonly recoveries: readonly Recovery[];
  readonly unrecoverable: readonly string[];
}

/**
 * The runtime's per-model routing index, for the default request: what a model serves now and
 * the copy a failover of a node would take, each chosen exactly as the scan would choose it.
 */
export interface RescueIndex {
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
  bestWithout(modelId: string, nodeId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
}

/** What the Swarm actor is created with. */
export interface SwarmInput {
  readonly plan: SwarmPlan;
  readonly profiles: readonly NodeProfile[];
  /** @defaultValue 0.3 */
  readonly alpha?: number;
  /** @defaultValue true */
  readonly allowDegraded?: boolean;
  /**
   * The runtime's live telemetry table, kept in step with the node actors; read here to compute
   * rescues from the state before a mark. Never written by the machine.
   */
  readonly telemetry?: NodeStates;
  /** In-flight load per node, live; read like `telemetry`. */
  readonly inflight?: ExtraLoad;
  /** The routing index over `telemetry` and `inflight`; without it, rescues scan. */
  readonly index?: RescueIndex;
  /** Failure detector settings of every node actor. @defaultValue Akka's */
  readonly failureDetector?: PhiOptions;
  /** Passive ejection settings of every node actor and the swarm's cap. */
  readonly ejection?: EjectionOptions;
}

/** The Swarm's context. Counters make every guard O(1). */
export interface SwarmContext {
  readonly plan: SwarmPlan;
  /** Each member node's slot in `alive` (plan nodes and spares); a removed node has none. */
  readonly slot: Readonly<Record<string, number>>;
  /**
   * Alive (1) or down (0) per slot: the parent's mirror of its children. A byte array, because a
   * mark copies it: 8,000 bytes copy in about a microsecond, an 8,000-key record in milliseconds.
   */
  readonly alive: Uint8Array;
  readonly inPlan: Readonly<Record<string, boolean>>;
  readonly aliveCount: number;
  /** Nodes of the current plan that are down. */
  readonly planDownCount: number;
  readonly nodes: Readonly<Record<string, NodeActorRef>>;
  readonly alpha: number;
  readonly allowDegraded: boolean;
  readonly telemetry: NodeStates;
  readonly inflight: ExtraLoad;
  readonly index: RescueIndex | undefined;
  readonly rescue: PendingRescue | undefined;
  // ── failure detection and ejection (issue 15) ──
  /** Member nodes (plan nodes and spares), counted for the ejection cap. */
  readonly memberCount: number;
  /** Nodes down by ejection now, at most `ejection.maxEjectedShare` of the members. */
  readonly ejected: ReadonlySet<string>;
  readonly failureDetector: PhiOptions | undefined;
  readonly ejection: ResolvedEjectionOptions;
}

/** The swarm's status while it runs, from its counters: failed ⇔ none alive; degraded ⇔ a plan node down. */
export type LiveStatus = 'healthy' | 'degraded' | 'failed';

/**
 * What the Swarm emits (XState `emit`) for the orchestrator: a node suspected by its detector, a
 * node down (with the rescue computed before the mark, and why), a node back, and every status
 * change. The runtime re-exposes them as `swarm.on(type, handler)`.
 */
export type SwarmEmitted =
  | { readonly type: 'node.suspected'; readonly nodeId: string }
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause: DownCause; readonly rescue: PendingRescue & { readonly status: LiveStatus } }
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause: AliveCause }
  | { readonly type: 'status.changed'; readonly status: LiveStatus | 'stopped' };

/** The events of the Swarm statechart. */
export type SwarmEvent =
  /** A node down: `manual` (the orchestrator; the default) or `detector` (its node actor's report). */
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause?: 'manual' | 'detector' }
  /** A node back: `manual` (the default), or by itself (`heartbeat`, `probation`). */
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause?: AliveCause }
  /** A node actor's detector suspects it. */
  | { readonly type: 'node.suspected'; readonly nodeId: string }
  /** A node actor asks to be ejected for its failures; granted while under the cap. */
  | { readonly type: 'node.eject'; readonly nodeId: string }
  | { readonly type: 'node.added'; readonly profile: NodeProfile; readonly plan: SwarmPlan }
  | { readonly type: 'node.removed'; readonly nodeId: string; readonly plan: SwarmPlan }
  | { readonly type: 'swarm.stop' };

/** Whether a member node is alive in the Swarm's mirror (false for a stranger). */
export function isAliveIn(context: Pick<SwarmContext, 'slot' | 'alive'>, nodeId: string): boolean {
  const i = context.slot[nodeId];
  return i !== undefined && context.alive[i] === 1;
}

/** The alive mirror as a plain record, for serialising and tests. */
export function aliveRecord(context: Pick<SwarmContext, 'slot' | 'alive'>): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [id, i] of Object.entries(context.slot)) out[id] = context.alive[i] === 1;
  return out;
}

function countPlanDown(plan: SwarmPlan, context: Pick<SwarmContext, 'slot' | 'alive'>): { inPlan: Record<string, boolean>; planDownCount: number } {
  const inPlan: Record<string, boolean> = {};
  let planDownCount = 0;
  for (const id of planNodeIds(plan)) {
    inPlan[id] = true;
    if (!isAliveIn(context, id)) planDownCount++;
  }
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

/**
 * The rescue for `nodeId`, from the state before the mark: for every model whose served route
 * uses the node, its failover (intact copy → splice → degraded → Unrecoverable).
 * A model none of whose pipelines uses the node is skipped without routing it: whatever it
 * serves (a copy, a splice or the survivors of a copy) is made of its own pipelines' nodes.
 */
export function computeRescue(context: SwarmContext, nodeId: string): PendingRescue {
  const state = { plan: context.plan, nodes: context.telemetry };
  const r = resolveRequest({});
  const recoveries: Recovery[] = [];
  const unrecoverable: string[] = [];
  const models = modelsUsing(context.plan, nodeId);
  if (models === undefined) return { nodeId, recoveries, unrecoverable };
  for (const model of context.plan.models) {
    if (!models.has(model.id)) continue;
    // The common case, from the index in O(log P): the model serves an intact copy, and another
    // intact copy without the node exists. The same choice and cost as the scan below.
    const served = context.index?.best(model.id);
    let current: Route;
    if (served !== undefined) {
      if (!served.pipeline.stages.some((s) => s.nodeId === nodeId)) continue;
      current = makeRoute(model.id, served.pipeline.id, served.pipeline.stages, state.nodes, r, false, context.inflight);
      const copy = context.index?.bestWithout(model.id, nodeId);
      if (copy !== undefined) {
        const route = makeRoute(model.id, copy.pipeline.id, copy.pipeline.stages, state.nodes, r, false, context.inflight);
        recoveries.push({ modelId: model.id, strategy: 'copy', degraded: false, route, from: current, replaced: [], missingLayers: [] });
        continue;
      }
    } else {
      try {
        current = serveModel(model.id, r, state, { allowDegraded: context.allowDegraded, extra: context.inflight });
      } catch {
        continue; // nothing was being served for this model: nothing to rescue
      }
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

/**
 * The Swarm: its states are the swarm's status. `node.down` runs `computeRescue` and only then
 * `markNodeDown`, so the failover knows what was lost, not only that something is missing.
 * Status follows from counters through eventless transitions: failed ⇔ zero nodes alive;
 * degraded ⇔ some node of the plan down; healthy otherwise.
 */
export const swarmMachine = setup({
  types: {
    context: {} as SwarmContext,
    events: {} as SwarmEvent,
    input: {} as SwarmInput,
    emitted: {} as SwarmEmitted,
  },
  guards: {
    isAliveMember: ({ context, event }) => 'nodeId' in event && isAliveIn(context, event.nodeId),
    isDownMember: ({ context, event }) => 'nodeId' in event && context.slot[event.nodeId] !== undefined && !isAliveIn(context, event.nodeId),
    isNewNode: ({ context, event }) => event.type === 'node.added' && context.slot[event.profile.id] === undefined,
    isMember: ({ context, event }) => 'nodeId' in event && context.slot[event.nodeId] !== undefined,
    noneAlive: ({ context }) => context.aliveCount === 0,
    someAlive: ({ context }) => context.aliveCount > 0,
    somePlanNodeDown: ({ context }) => context.planDownCount > 0,
    allPlanNodesAlive: ({ context }) => context.planDownCount === 0,
    // ── failure detection and ejection (issue 15) ──
    /** The orchestrator marks down a node the detector or an ejection already took down: its mark wins. */
    isManualOnDownMember: ({ context, event }) =>
      event.type === 'node.down' && (event.cause ?? 'manual') === 'manual' && context.slot[event.nodeId] !== undefined && !isAliveIn(context, event.nodeId),
    ejectionRoom: ({ context }) => ejectionRoom(context.ejected.size, context.memberCount, context.ejection),
  },
  actions: {
    computeRescue: assign({
      rescue: ({ context, event }) => (event.type === 'node.down' || event.type === 'node.eject' ? computeRescue(context, event.nodeId) : undefined),
    }),
    markNodeDown: assign(({ context, event }) => {
      if (event.type !== 'node.down' && event.type !== 'node.eject') return {};
      return {
        alive: withSlot(context.alive, context.slot[event.nodeId] as number, 0),
        aliveCount: context.aliveCount - 1,
        planDownCount: context.planDownCount + (context.inPlan[event.nodeId] === true ? 1 : 0),
      };
    }),
    markNodeAlive: assign(({ context, event }) => {
      if (event.type !== 'node.alive') return {};
      return {
        alive: withSlot(context.alive, context.slot[event.nodeId] as number, 1),
        aliveCount: context.aliveCount + 1,
        planDownCount: context.planDownCount - (context.inPlan[event.nodeId] === true ? 1 : 0),
      };
    }),
    tellNodeDown: sendTo(
      ({ context, event }) => context.nodes[(event as { nodeId: string }).nodeId] as NodeActorRef,
      ({ event }) => ({ type: 'node.down' as const, cause: downCause(event) }),
    ),
    tellNodeAlive: sendTo(({ context, event }) => context.nodes[(event as { nodeId: string }).nodeId] as NodeActorRef, { type: 'node.alive' }),
    tellNodeRetire: sendTo(({ context, event }) => context.nodes[(event as { nodeId: string }).nodeId] as NodeActorRef, { type: 'node.retire' }),
    spawnNode: assign(({ context, event, self }) => {
      if (event.type !== 'node.added') return {};
      const p = event.profile;
      const ref = createNodeActor(self, p, context.alpha, context);
      const i = context.alive.length; // slots are never reused: a removed node's stays 0
      return { nodes: { ...context.nodes, [p.id]: ref }, slot: { ...context.slot, [p.id]: i }, alive: withSlot(context.alive, i, 1), aliveCount: context.aliveCount + 1, memberCount: context.memberCount + 1 };
    }),
    startNode: ({ context, event }) => {
      if (event.type === 'node.added') context.nodes[event.profile.id]?.start();
    },
    startNodes: ({ context }) => {
      for (const ref of Object.values(context.nodes)) ref.start();
    },
    // Retiring a node actor ends it (final state); one pass, O(N).
    retireNodes: ({ context }) => {
      for (const ref of Object.values(context.nodes)) ref.send({ type: 'node.retire' });
    },
    forgetNode: assign(({ context, event }) => {
      if (event.type !== 'node.removed') return {};
      const { [event.nodeId]: _ref, ...nodes } = context.nodes;
      const { [event.nodeId]: i, ...slot } = context.slot;
      const wasAlive = isAliveIn(context, event.nodeId);
      return {
        nodes,
        slot,
        alive: i === undefined ? context.alive : withSlot(context.alive, i, 0),
        aliveCount: context.aliveCount - (wasAlive ? 1 : 0),
        memberCount: context.memberCount - (i === undefined ? 0 : 1),
        ejected: withoutMember(context.ejected, event.nodeId),
      };
    }),
    adoptPlan: assign(({ context, event }) => {
      if (event.type !== 'node.added' && event.type !== 'node.removed') return {};
      return { plan: event.plan, ...countPlanDown(event.plan, context) };
    }),
    // ── failure detection and ejection (issue 15) ──
    recordEjected: assign({ ejected: ({ context, event }) => (event.type === 'node.eject' ? new Set([...context.ejected, event.nodeId]) : context.ejected) }),
    forgetEjected: assign({ ejected: ({ context, event }) => ('nodeId' in event ? withoutMember(context.ejected, event.nodeId) : context.ejected) }),
    emitNodeDown: emit(({ context, event }) => {
      const nodeId = (event as { nodeId: string }).nodeId;
      const rescue = context.rescue ?? { nodeId, recoveries: [], unrecoverable: [] };
      return { type: 'node.down' as const, nodeId, cause: downCause(event), rescue: { ...rescue, status: liveStatus(context) } };
    }),
    emitNodeAlive: emit(({ event }) => ({ type: 'node.alive' as const, nodeId: (event as { nodeId: string }).nodeId, cause: event.type === 'node.alive' ? (event.cause ?? 'manual') : 'manual' })),
    emitNodeSuspected: emit(({ event }) => ({ type: 'node.suspected' as const, nodeId: (event as { nodeId: string }).nodeId })),
    emitStatus: emit((_, params: { status: LiveStatus | 'stopped' }) => ({ type: 'status.changed' as const, status: params.status })),
  },
}).createMachine({
  id: 'swarm',
  context: ({ input, self }) => {
    const alpha = input.alpha ?? 0.3;
    const nodes: Record<string, NodeActorRef> = {};
    const slot: Record<string, number> = {};
    const alive = new Uint8Array(input.profiles.length).fill(1);
    const detection = { failureDetector: input.failureDetector, ejection: resolveEjectionOptions(input.ejection) };
    // Node actors live in this keyed collection, in the Swarm's actor system (so inspection sees
    // them) but not in its snapshot's children: xstate 5.33 spawns and stops children in O(N²).
    input.profiles.forEach((p, i) => {
      nodes[p.id] = createNodeActor(self, p, alpha, detection);
      slot[p.id] = i;
    });
    return {
      plan: input.plan,
      slot,
      alive,
      ...countPlanDown(input.plan, { slot, alive }),
      aliveCount: input.profiles.length,
      nodes,
      alpha,
      allowDegraded: input.allowDegraded ?? true,
      telemetry: input.telemetry ?? {},
      inflight: input.inflight ?? {},
      index: input.index,
      rescue: undefined,
      memberCount: input.profiles.length,
      ejected: new Set<string>(),
      ...detection,
    };
  },
  on: {
    'node.down': [
      { guard: 'isAliveMember', actions: ['computeRescue', 'markNodeDown', 'tellNodeDown', 'emitNodeDown'] },
      { guard: 'isManualOnDownMember', actions: ['forgetEjected', 'tellNodeDown'] },
    ],
    'node.eject': { guard: and(['isAliveMember', 'ejectionRoom']), actions: ['computeRescue', 'markNodeDown', 'recordEjected', 'tellNodeDown', 'emitNodeDown'] },
    'node.alive': { guard: 'isDownMember', actions: ['markNodeAlive', 'forgetEjected', 'tellNodeAlive', 'emitNodeAlive'] },
    'node.suspected': { guard: 'isAliveMember', actions: 'emitNodeSuspected' },
    'node.added': { guard: 'isNewNode', actions: ['spawnNode', 'startNode', 'adoptPlan'] },
    'node.removed': { guard: 'isMember', actions: ['tellNodeRetire', 'forgetNode', 'adoptPlan'] },
  },
  entry: 'startNodes',
  initial: 'healthy',
  states: {
    healthy: {
      entry: { type: 'emitStatus', params: { status: 'healthy' } },
      always: [
        { guard: 'noneAlive', target: 'failed' },
        { guard: 'somePlanNodeDown', target: 'degraded' },
      ],
      on: { 'swarm.stop': 'stopped' },
    },
    degraded: {
      entry: { type: 'emitStatus', params: { status: 'degraded' } },
      always: [
        { guard: 'noneAlive', target: 'failed' },
        { guard: 'allPlanNodesAlive', target: 'healthy' },
      ],
      on: { 'swarm.stop': 'stopped' },
    },
    failed: {
      entry: { type: 'emitStatus', params: { status: 'failed' } },
      always: [
        { guard: and(['someAlive', 'allPlanNodesAlive']), target: 'healthy' },
        { guard: 'someAlive', target: 'degraded' },
      ],
      on: { 'swarm.stop': 'stopped' },
    },
    stopped: { type: 'final', entry: ['retireNodes', { type: 'emitStatus', params: { status: 'stopped' } }] },
  },
});

/** A node actor in the Swarm's system, not yet started (the Swarm starts it in an action). */
function createNodeActor(parent: AnyActorRef, p: NodeProfile, alpha: number, detection: Pick<SwarmContext, 'failureDetector' | 'ejection'>): NodeActorRef {
  const input = { id: p.id, alpha, ...declared(p), ejection: detection.ejection, ...(detection.failureDetector !== undefined ? { phi: detection.failureDetector } : {}) };
  return createActor(nodeMachine, { parent, id: `node:${p.id}`, input });
}

// ── failure detection and ejection (issue 15) ──

/** The status the counters give: what the eventless transitions are about to settle on. */
export function liveStatus(context: Pick<SwarmContext, 'aliveCount' | 'planDownCount'>): LiveStatus {
  if (context.aliveCount === 0) return 'failed';
  return context.planDownCount > 0 ? 'degraded' : 'healthy';
}

function downCause(event: SwarmEvent): DownCause {
  if (event.type === 'node.eject') return 'ejected';
  return event.type === 'node.down' ? (event.cause ?? 'manual') : 'manual';
}

function withoutMember(set: ReadonlySet<string>, nodeId: string): ReadonlySet<string> {
  if (!set.has(nodeId)) return set;
  const next = new Set(set);
  next.delete(nodeId);
  return next;
}

function declared(p: NodeProfile): { latencyMs?: number; score?: number } {
  return { ...(p.latencyMs !== undefined ? { latencyMs: p.latencyMs } : {}), ...(p.score !== undefined ? { score: p.score } : {}) };
}
