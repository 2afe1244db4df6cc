import { and, assign, createActor, emit, enqueueActions, sendTo, setup, stopChild, type AnyActorRef } from 'xstate';
import { ejectionRoom, resolveEjectionOptions } from '../src/core/ejection.js';
import { deepFreeze } from '../src/core/freeze.js';
import { nextSeededId } from '../src/core/seeded-id.js';
import { declaredTelemetry, planNodeIds } from '../src/core/state.js';
import { planGrowth, planRetirement } from '../src/core/telomerase.js';
import type { IdSource, NodeProfile, NodeStates, NodeTelemetry, SwarmPlan } from '../src/core/types.js';
import { validatePlan } from '../src/core/validate.js';
import { nodeMachine, type DownCause, type NodeRecord } from './node.machine.js';
import { computeRescue } from './rescue.js';
import { entryOf, isAliveIn, isMember, joinIssue, livenessView, type AutoMark, type LiveStatus, type Member, type NodeActorRef, type SwarmContext, type SwarmEmitted, type SwarmEvent, type SwarmInput, type SwarmRestore } from './swarm-context.js';

export * from './swarm-context.js';
export { computeRescue } from './rescue.js';

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
    // ── failure detection and ejection (issue 15) ──
    /** The orchestrator marks down a node the detector or an ejection already took down: its mark wins. */
    isManualOnAutoDown: ({ context, event }) => event.type === 'node.down' && (event.cause ?? 'manual') === 'manual' && (context.detected.has(event.nodeId) || context.ejected.has(event.nodeId)),
    ejectionRoom: ({ context }) => ejectionRoom(context.ejected.size, context.members.size, context.ejection, context.aliveCount),
    // ── replication (issue 18) ──
    /** A replica's node actor marked a node on its own: proposed, never applied here (docs/replication.md). */
    isUnloggedAutoMark: ({ context, event }) => context.propose && autoMark(event) !== undefined,
  },
  actions: {
    computeRescue: assign({
      outcome: ({ context, event }) => (event.type === 'node.down' || event.type === 'node.eject' ? deepFreeze({ kind: 'rescue' as const, ...computeRescue(context, event.nodeId) }) : context.outcome),
    }),
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
    tellNodeDown: sendTo(
      ({ context, event }) => (context.members.get((event as { nodeId: string }).nodeId) as Member).ref,
      ({ event }) => ({ type: 'node.down' as const, cause: downCause(event) }),
    ),
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
      const members = new Map(context.members).set(o.nodeId, { profile: o.profile, slot, ref: createNodeActor(self, o.profile, context.alpha, context) });
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
      return {
        members,
        freeSlots: [...context.freeSlots, m.slot],
        alive: withSlot(context.alive, m.slot, 0),
        aliveCount: context.aliveCount - (wasAlive ? 1 : 0),
        ejected: withoutMember(context.ejected, event.nodeId),
        detected: withoutMember(context.detected, event.nodeId),
      };
    }),
    adoptPlan: assign(({ context }) => {
      const o = context.outcome;
      if (o?.kind !== 'growth' && o?.kind !== 'retirement') return {};
      return { plan: o.plan, ...countPlanDown(o.plan, context) };
    }),
    startNodes: ({ context }) => {
      for (const m of context.members.values()) m.ref.start();
    },
    /** A member down from the start (restored, or `alive: false` in the input) tells its actor why. */
    tellDownAtStart: enqueueActions(({ context, enqueue }) => {
      if (context.aliveCount === context.members.size) return;
      for (const [id, m] of context.members) {
        if (context.alive[m.slot] === 0) enqueue.sendTo(m.ref, { type: 'node.down', cause: context.detected.has(id) ? 'detector' : context.ejected.has(id) ? 'ejected' : 'manual' });
      }
    }),
    // One pass, O(N); stopped rather than retired, for the reason given at `stopNode`.
    stopNodes: enqueueActions(({ context, enqueue }) => {
      for (const m of context.members.values()) enqueue.stopChild(m.ref);
    }),
    // ── failure detection and ejection (issue 15) ──
    recordEjected: assign({ ejected: ({ context, event }) => (event.type === 'node.eject' ? new Set([...context.ejected, event.nodeId]) : context.ejected) }),
    recordDetected: assign({ detected: ({ context, event }) => (event.type === 'node.down' && event.cause === 'detector' ? new Set([...context.detected, event.nodeId]) : context.detected) }),
    /** The node is no longer down by the detector or an ejection (back, or marked by hand). */
    forgetCause: assign(({ context, event }) => ('nodeId' in event ? { ejected: withoutMember(context.ejected, event.nodeId), detected: withoutMember(context.detected, event.nodeId) } : {})),
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
    /** Proposes an own mark that would change something (the node's liveness as the mark needs it). */
    proposeMark: enqueueActions(({ context, event, enqueue }) => {
      const mark = autoMark(event);
      if (mark !== undefined && isAliveIn(context, mark.nodeId) === (mark.type !== 'node.alive')) enqueue.emit({ type: 'node.proposed' as const, mark });
    }),
    emitStatus: emit((_, params: { status: LiveStatus | 'stopped' }) => ({ type: 'status.changed' as const, status: params.status })),
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
    const detection = { failureDetector: input.failureDetector, ejection: resolveEjectionOptions(input.ejection) };
    const restore = input.restore;
    input.profiles.forEach((p, i) => {
      const profile = deepFreeze({ ...p });
      const cause = restore?.down.get(p.id);
      let record = restore?.records.get(p.id);
      // Its `node.down` at start re-enters the ban, which counts one more ejection.
      if (cause === 'ejected' && record !== undefined) record = { ...record, ejections: Math.max(record.ejections - 1, 0) };
      members.set(p.id, { profile, slot: i, ref: createNodeActor(self, profile, alpha, detection, record) });
      if (cause === undefined && entryOf(telemetry, p.id)?.alive !== false) {
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
      inflight: input.inflight ?? Object.create(null),
      index: input.index,
      outcome: restore?.outcome,
      ejected: downBy(restore, 'ejected'),
      detected: downBy(restore, 'detector'),
      ...detection,
      propose: input.propose === true,
    };
  },
  on: {
    'node.down': [
      { guard: 'isUnloggedAutoMark', actions: 'proposeMark' },
      { guard: 'isAliveMember', actions: ['computeRescue', 'markNodeDown', 'recordDetected', 'tellNodeDown', 'emitNodeDown'] },
      { guard: 'isManualOnAutoDown', actions: ['noOutcome', 'forgetCause', 'tellNodeDown'] },
    ],
    'node.eject': [
      { guard: 'isUnloggedAutoMark', actions: 'proposeMark' },
      { guard: and(['isAliveMember', 'ejectionRoom']), actions: ['computeRescue', 'markNodeDown', 'recordEjected', 'tellNodeDown', 'emitNodeDown'] },
    ],
    'node.alive': [
      { guard: 'isUnloggedAutoMark', actions: 'proposeMark' },
      { guard: 'isDownMember', actions: ['markNodeAlive', 'forgetCause', 'tellNodeAlive', 'emitNodeAlive'] },
    ],
    'node.suspected': { guard: 'isAliveMember', actions: 'emitNodeSuspected' },
    'node.added': { guard: 'canJoin', actions: ['decideGrowth', 'spawnNode', 'startNode', 'adoptPlan'] },
    'node.removed': { guard: 'isMember', actions: ['decideRetirement', 'stopNode', 'forgetNode', 'adoptPlan'] },
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

/** Each profile's declared telemetry, as a null-prototype record. */
function declaredTable(profiles: readonly NodeProfile[]): NodeStates {
  const table: Record<string, NodeTelemetry> = Object.create(null) as Record<string, NodeTelemetry>;
  for (const p of profiles) table[p.id] = Object.freeze(declaredTelemetry(p));
  return table;
}

/** A node actor in the Swarm's system, not yet started (the Swarm starts it in an action). */
function createNodeActor(parent: AnyActorRef, p: NodeProfile, alpha: number, detection: Pick<SwarmContext, 'failureDetector' | 'ejection'>, record?: NodeRecord): NodeActorRef {
  const input = { id: p.id, alpha, ...declared(p), ejection: detection.ejection, ...(detection.failureDetector !== undefined ? { phi: detection.failureDetector } : {}), ...(record !== undefined ? { record } : {}) };
  return createActor(nodeMachine, { parent, id: `node:${p.id}`, input });
}

// ── failure detection and ejection (issue 15) ──

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

/** The node actor's own mark an event is, unless it came back from the log; undefined for any other event. */
function autoMark(event: SwarmEvent): AutoMark | undefined {
  if (event.type === 'node.eject') return event.logged === true ? undefined : { type: 'node.eject', nodeId: event.nodeId };
  if (event.type === 'node.down') return event.cause === 'detector' && event.logged !== true ? { type: 'node.down', nodeId: event.nodeId, cause: 'detector' } : undefined;
  if (event.type === 'node.alive' && event.logged !== true && (event.cause === 'heartbeat' || event.cause === 'probation')) return { type: 'node.alive', nodeId: event.nodeId, cause: event.cause };
  return undefined;
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
