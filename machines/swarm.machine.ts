import { and, assign, emit, enqueueActions, sendTo, setup, stopChild, type AnyActorRef } from 'xstate';
import { ejectionRoom, resolveEjectionOptions } from '../src/core/ejection.js';
import { deepFreeze } from '../src/core/freeze.js';
import { planNodeIds } from '../src/core/state.js';
import type { SwarmPlan } from '../src/core/types.js';
import type { DownCause } from './node.machine.js';
import { createNodeActor, nodeActorOf } from './node-actors.js';
import { DEFAULT_READERS, growthUpdate, profilesOf, rescueUpdate, retirementUpdate } from './swarm-decisions.js';
import { abortMovesOf, beginIssue, beginMoves, copyDrained, spanLoaded, type MoveStep } from './swarm-moves.js';
import { downCauseOf, isAliveIn, isMember, joinIssue, nodeKey, type LiveStatus, type Member, type OwnMark, type SwarmContext, type SwarmEmitted, type SwarmEvent, type SwarmInput, type SwarmReaders, type SwarmRestore } from './swarm-context.js';

export * from './swarm-context.js';
export * from './swarm-moves.js';
export { computeRescue } from './rescue.js';
export { nodeActorOf } from './node-actors.js';
export type { RescueReads } from './rescue.js';

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
    emitted: {} as SwarmEmitted,
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
    // ── failure detection and ejection (docs/detection.md) ──
    /** The orchestrator marks down a node the detector or an ejection already took down: its mark wins. */
    isManualOnAutoDown: ({ context, event }) => event.type === 'node.down' && (event.cause ?? 'manual') === 'manual' && (context.detected.has(event.nodeId) || context.ejected.has(event.nodeId)),
    ejectionRoom: ({ context }) => ejectionRoom(context.ejected.size, context.members.size, context.ejection, context.aliveCount),
    /** An own mark of a node actor (not yet decided by the owner). */
    isOwnMark: ({ event }) => ownMark(event) !== undefined,
    /**
     * The policy for own marks: applied at once (the default), or deferred to the owner, who
     * decides when each applies and sends it back `decided` (`provideSwarm`'s `defersOwnMarks`).
     */
    defersOwnMarks: () => false,
    // ── rebalancing (machines/swarm-moves.ts) ──
    canBeginMoves: ({ context, event }) => event.type === 'rebalance.begin' && beginIssue(context.plan, context.moves, event.moves, (id) => isAliveIn(context, id)) === undefined,
    isSpanLoading: ({ context, event }) => {
      if (event.type !== 'span.loaded' && event.type !== 'span.failed') return false;
      const m = context.moves?.get(event.moveId);
      return m !== undefined && m.phase === 'loading' && m.waiting.includes(event.nodeId);
    },
    isDraining: ({ context, event }) => event.type === 'copy.drained' && context.moves?.get(event.moveId)?.phase === 'draining',
  },
  actions: {
    computeRescue: assign(({ context, event }) => rescueUpdate(context, event, DEFAULT_READERS)),
    decideGrowth: assign(({ context, event }) => growthUpdate(context, event, DEFAULT_READERS)),
    decideRetirement: assign(({ context, event }) => retirementUpdate(context, event, DEFAULT_READERS)),
    markNodeDown: assign(({ context, event }) => {
      if (event.type !== 'node.down' && event.type !== 'node.eject') return {};
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
    /**
     * A snapshot restored by XState alone carries no node actor: the event's node gets one here,
     * started and told why it is down if it is (created while the transition is resolved, as XState
     * creates actors, not while a custom action executes).
     */
    ensureNodeActor: assign(({ context, event, self }) => {
      const m = 'nodeId' in event ? context.members.get(event.nodeId) : undefined;
      if (m !== undefined && self.system?.get(nodeKey(m.profile.id)) === undefined) nodeActorOf(self, context, m.profile.id);
      return {};
    }),
    tellNodeDown: sendTo(({ event, system }) => system.get(nodeKey((event as { nodeId: string }).nodeId)), ({ event }) => ({ type: 'node.down' as const, cause: downCause(event) })),
    tellNodeAlive: sendTo(({ event, system }) => system.get(nodeKey((event as { nodeId: string }).nodeId)), { type: 'node.alive' }),
    spawnNode: assign(({ context, self }) => {
      const o = context.outcome;
      if (o?.kind !== 'growth') return {};
      createNodeActor(self, o.profile, context.alpha, context); // started by startNode
      const free = context.freeSlots;
      const slot = free.length > 0 ? (free[free.length - 1] as number) : context.alive.length;
      const members = new Map(context.members).set(o.nodeId, { profile: o.profile, slot });
      return { members, freeSlots: free.length > 0 ? free.slice(0, -1) : free, alive: withSlot(context.alive, slot, 1), aliveCount: context.aliveCount + 1 };
    }),
    startNode: ({ context, self }) => {
      const o = context.outcome;
      if (o?.kind === 'growth') nodeActorOf(self, context, o.nodeId);
    },
    // Stopped, not retired: a node actor reaching its final state would send the Swarm an
    // `xstate.done.actor.node:<id>` event, and XState caches transitions per event type on the
    // shared machine, for ever — one entry per id ever removed.
    stopNode: stopChild(({ context, event, self }) => (event.type === 'node.removed' && context.outcome?.kind === 'retirement' ? self.system.get(nodeKey(event.nodeId)) : undefined) as AnyActorRef),
    forgetNode: assign(({ context, event }) => {
      if (event.type !== 'node.removed' || context.outcome?.kind !== 'retirement') return {};
      const m = context.members.get(event.nodeId) as Member;
      const members = new Map(context.members);
      members.delete(event.nodeId);
      const wasAlive = context.alive[m.slot] === 1;
      return {
        members,
        freeSlots: [...context.freeSlots, m.slot],
        alive: withSlot(context.alive, m.slot, 0),
        aliveCount: context.aliveCount - (wasAlive ? 1 : 0),
        ejected: withoutMember(context.ejected, event.nodeId),
        detected: withoutMember(context.detected, event.nodeId),
        ...quarantineWithout(context, event.nodeId),
      };
    }),
    adoptPlan: assign(({ context }) => {
      const o = context.outcome;
      if (o?.kind !== 'growth' && o?.kind !== 'retirement') return {};
      return { plan: o.plan, ...countPlanDown(o.plan, context) };
    }),
    startNodes: ({ context, self }) => {
      for (const id of context.members.keys()) nodeActorOf(self, context, id, undefined, false);
    },
    /** A member down from the start (restored, or in `down`) tells its actor why. */
    tellDownAtStart: enqueueActions(({ context, enqueue, system }) => {
      if (context.aliveCount === context.members.size) return;
      for (const id of context.members.keys()) {
        const ref = system.get(nodeKey(id)) as AnyActorRef | undefined;
        const cause = downCauseOf(context, id);
        if (cause !== undefined && ref !== undefined) enqueue.sendTo(ref, { type: 'node.down', cause });
      }
    }),
    // One pass, O(N); stopped rather than retired, for the reason given at `stopNode`.
    stopNodes: enqueueActions(({ context, enqueue, self }) => {
      for (const id of context.members.keys()) {
        const ref = self.system?.get(nodeKey(id)) as AnyActorRef | undefined;
        if (ref !== undefined) enqueue.stopChild(ref);
      }
    }),
    recordEjected: assign({ ejected: ({ context, event }) => (event.type === 'node.eject' ? new Set([...context.ejected, event.nodeId]) : context.ejected) }),
    recordDetected: assign({ detected: ({ context, event }) => (event.type === 'node.down' && event.cause === 'detector' ? new Set([...context.detected, event.nodeId]) : context.detected) }),
    recordQuarantined: assign(({ context, event }) => (event.type === 'node.down' && event.cause === 'integrity' ? { quarantined: new Set([...(context.quarantined ?? []), event.nodeId]) } : {})),
    /** The node is no longer down by the detector or an ejection (back, or marked by hand). */
    forgetCause: assign(({ context, event }) => ('nodeId' in event ? { ejected: withoutMember(context.ejected, event.nodeId), detected: withoutMember(context.detected, event.nodeId), ...quarantineWithout(context, event.nodeId) } : {})),
    /** A manual mark over a down node decides nothing new: no rescue, no revival. */
    noOutcome: assign({ outcome: undefined }),
    emitNodeDown: emit(({ context, event }) => {
      const nodeId = (event as { nodeId: string }).nodeId;
      const o = context.outcome;
      const rescue = o?.kind === 'rescue' ? { nodeId, recoveries: o.recoveries, unrecoverable: o.unrecoverable } : { nodeId, recoveries: [], unrecoverable: [] };
      return { type: 'node.down' as const, nodeId, cause: downCause(event), rescue: { ...rescue, status: liveStatus(context) } };
    }),
    emitNodeAlive: emit(({ event }) => ({ type: 'node.alive' as const, nodeId: (event as { nodeId: string }).nodeId, cause: event.type === 'node.alive' ? (event.cause ?? 'manual') : 'manual' })),
    emitNodeSuspected: emit(({ event }) => ({ type: 'node.suspected' as const, nodeId: (event as { nodeId: string }).nodeId })),
    /** Hands the owner an own mark that would change something (the node's liveness as the mark needs it). */
    deferMark: enqueueActions(({ context, event, enqueue }) => {
      const mark = ownMark(event);
      if (mark !== undefined && isAliveIn(context, mark.nodeId) === (mark.type !== 'node.alive')) enqueue.emit({ type: 'node.mark' as const, mark });
    }),
    emitNodeCleared: emit(({ event }) => ({ type: 'node.cleared' as const, nodeId: (event as { nodeId: string }).nodeId })),
    /** Tells the plan change (a refused one changed nothing and tells nothing). */
    emitPlanChange: enqueueActions(({ context, enqueue }) => {
      const o = context.outcome;
      if (o?.kind === 'growth') enqueue.emit({ type: 'node.joined' as const, nodeId: o.nodeId, profile: o.profile, plan: o.plan });
      if (o?.kind === 'retirement') enqueue.emit({ type: 'node.left' as const, nodeId: o.nodeId, plan: o.plan });
    }),
    beginMoves: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'rebalance.begin') return;
      const step = beginMoves(context.plan, deepFreeze(event.moves.map((o) => ({ ...o }))));
      applyMoveStep(context, step, enqueue);
      enqueue.emit({ type: 'moves.begun' as const, moveIds: [...step.moves.keys()], plan: step.plan });
    }),
    loadSpan: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'span.loaded' || context.moves === undefined) return;
      applyMoveStep(context, spanLoaded(context.plan, context.moves, event.moveId, event.nodeId, profilesOf(context)), enqueue);
    }),
    drainCopy: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'copy.drained' || context.moves === undefined) return;
      applyMoveStep(context, copyDrained(context.plan, context.moves, event.moveId), enqueue);
    }),
    /** A node down or gone aborts the moves it was loading a span for (after the rescue and the mark: their order is unchanged); a failed load aborts its move. */
    abortMoves: enqueueActions(({ context, event, enqueue }) => {
      if (!('nodeId' in event) || context.moves === undefined) return;
      const aborted = event.type === 'span.failed' ? [{ id: event.moveId, reason: `node "${event.nodeId}" could not load its span: ${event.reason}` }] : abortMovesOf(context.moves, event.nodeId);
      if (aborted.length === 0) return;
      const moves = new Map(context.moves);
      for (const a of aborted) moves.delete(a.id);
      applyMoveStep(context, { moves, plan: context.plan, formed: [], done: [], aborted }, enqueue);
    }),
    emitStatus: emit((_, params: { status: LiveStatus | 'stopped' }) => ({ type: 'status.changed' as const, status: params.status })),
  },
}).createMachine({
  id: 'swarm',
  context: ({ input, self }) => {
    const alpha = input.alpha ?? 0.3;
    const startDown = new Set(input.down ?? []);
    const members = new Map<string, Member>();
    const alive = new Uint8Array(input.profiles.length);
    let aliveCount = 0;
    // Node actors live in this keyed collection, in the Swarm's actor system (so inspection sees
    // them) but not in its snapshot's children: xstate 5.33 spawns and stops children in O(N²).
    const detection = { failureDetector: input.failureDetector, ejection: resolveEjectionOptions(input.ejection) };
    const restore = input.restore;
    input.profiles.forEach((p, i) => {
      const profile = deepFreeze({ ...p });
      const cause = restore?.down.get(p.id);
      let record = restore?.records.get(p.id);
      // Its `node.down` at start re-enters the ban, which counts one more ejection.
      if (cause === 'ejected' && record !== undefined) record = { ...record, ejections: Math.max(record.ejections - 1, 0) };
      members.set(p.id, { profile, slot: i });
      createNodeActor(self, profile, alpha, detection, record);
      if (cause === undefined && !startDown.has(p.id)) {
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
      outcome: restore?.outcome,
      ejected: downBy(restore, 'ejected'),
      detected: downBy(restore, 'detector'),
      quarantined: downBy(restore, 'integrity'),
      ...detection,
    };
  },
  on: {
    'node.down': [
      { guard: and(['defersOwnMarks', 'isOwnMark']), actions: 'deferMark' },
      { guard: 'isAliveMember', actions: ['computeRescue', 'markNodeDown', 'recordDetected', 'recordQuarantined', 'ensureNodeActor', 'tellNodeDown', 'emitNodeDown', 'abortMoves'] },
      { guard: 'isManualOnAutoDown', actions: ['noOutcome', 'forgetCause', 'ensureNodeActor', 'tellNodeDown'] },
    ],
    'node.eject': [
      { guard: and(['defersOwnMarks', 'isOwnMark']), actions: 'deferMark' },
      { guard: and(['isAliveMember', 'ejectionRoom']), actions: ['computeRescue', 'markNodeDown', 'recordEjected', 'ensureNodeActor', 'tellNodeDown', 'emitNodeDown', 'abortMoves'] },
    ],
    'node.alive': [
      { guard: and(['defersOwnMarks', 'isOwnMark']), actions: 'deferMark' },
      { guard: 'isDownMember', actions: ['markNodeAlive', 'forgetCause', 'ensureNodeActor', 'tellNodeAlive', 'emitNodeAlive'] },
    ],
    'node.suspected': { guard: 'isAliveMember', actions: 'emitNodeSuspected' },
    'node.cleared': { guard: 'isAliveMember', actions: 'emitNodeCleared' },
    'node.added': { guard: 'canJoin', actions: ['decideGrowth', 'spawnNode', 'startNode', 'adoptPlan', 'emitPlanChange'] },
    'node.removed': { guard: 'isMember', actions: ['decideRetirement', 'stopNode', 'forgetNode', 'adoptPlan', 'emitPlanChange', 'abortMoves'] },
    'rebalance.begin': { guard: 'canBeginMoves', actions: 'beginMoves' },
    'span.loaded': { guard: 'isSpanLoading', actions: 'loadSpan' },
    'span.failed': { guard: 'isSpanLoading', actions: 'abortMoves' },
    'copy.drained': { guard: 'isDraining', actions: 'drainCopy' },
  },
  entry: ['startNodes', 'tellDownAtStart'],
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
    stopped: { type: 'final', entry: ['stopNodes', { type: 'emitStatus', params: { status: 'stopped' } }] },
  },
});

/**
 * Assigns a move step (the pending moves, the plan and its counters; `moves` absent once none is
 * pending) and emits what it formed, finished and aborted.
 */
function applyMoveStep(context: SwarmContext, step: MoveStep, enqueue: { assign: (a: Partial<SwarmContext>) => void; emit: (e: SwarmEmitted) => void }): void {
  const plan = step.plan === context.plan ? context.plan : deepFreeze(step.plan);
  enqueue.assign({ moves: step.moves.size > 0 ? step.moves : undefined, ...(plan !== context.plan ? { plan, ...countPlanDown(plan, context) } : {}) });
  for (const id of step.formed) enqueue.emit({ type: 'copy.formed', moveId: id, plan });
  for (const id of step.done) enqueue.emit({ type: 'move.done', moveId: id });
  for (const a of step.aborted) enqueue.emit({ type: 'move.aborted', moveId: a.id, reason: a.reason });
}

/** The status the counters give: what the eventless transitions are about to settle on. */
export function liveStatus(context: Pick<SwarmContext, 'aliveCount' | 'planDownCount'>): LiveStatus {
  if (context.aliveCount === 0) return 'failed';
  return context.planDownCount > 0 ? 'degraded' : 'healthy';
}

/** The restored members down for `cause`. */
function downBy(restore: SwarmRestore | undefined, cause: DownCause): ReadonlySet<string> {
  const out = new Set<string>();
  if (restore !== undefined) for (const [id, c] of restore.down) if (c === cause) out.add(id);
  return out;
}

function downCause(event: SwarmEvent): DownCause {
  if (event.type === 'node.eject') return 'ejected';
  return event.type === 'node.down' ? (event.cause ?? 'manual') : 'manual';
}

/** The node actor's own mark an event is, unless the owner has decided it; undefined for any other event. */
function ownMark(event: SwarmEvent): OwnMark | undefined {
  if (event.type === 'node.eject') return event.decided === true ? undefined : { type: 'node.eject', nodeId: event.nodeId };
  if (event.type === 'node.down') return event.cause === 'detector' && event.decided !== true ? { type: 'node.down', nodeId: event.nodeId, cause: 'detector' } : undefined;
  if (event.type === 'node.alive' && event.decided !== true && (event.cause === 'heartbeat' || event.cause === 'probation')) return { type: 'node.alive', nodeId: event.nodeId, cause: event.cause };
  return undefined;
}

/** The context's quarantine without `nodeId` (nothing to assign when it is not there). */
function quarantineWithout(context: SwarmContext, nodeId: string): Partial<SwarmContext> {
  return context.quarantined?.has(nodeId) === true ? { quarantined: withoutMember(context.quarantined, nodeId) } : {};
}

function withoutMember(set: ReadonlySet<string>, nodeId: string): ReadonlySet<string> {
  if (!set.has(nodeId)) return set;
  const next = new Set(set);
  next.delete(nodeId);
  return next;
}

/** The policies and readers a running Swarm is given: what `swarmMachine.provide` injects. */
export interface SwarmImplementations extends SwarmReaders {
  /** Own marks of node actors are handed to the owner (`node.mark`) instead of applied. @defaultValue false */
  readonly defersOwnMarks?: boolean;
}

/**
 * The Swarm statechart with the runtime's implementations injected (XState's `provide`): its
 * decisions read `readers`, and `defersOwnMarks` sets the policy for node actors' own marks. The
 * context stays data, so a snapshot of either machine restores with the other.
 * @example createActor(provideSwarm({ telemetry: () => table }), { input })
 */
export function provideSwarm(implementations: SwarmImplementations = {}) {
  const defers = implementations.defersOwnMarks === true;
  return swarmMachine.provide({
    actions: {
      computeRescue: assign(({ context, event }) => rescueUpdate(context, event, implementations)),
      decideGrowth: assign(({ context, event }) => growthUpdate(context, event, implementations)),
      decideRetirement: assign(({ context, event }) => retirementUpdate(context, event, implementations)),
    },
    guards: { defersOwnMarks: () => defers },
  });
}
