/**
 * A Swarm's lifecycle commands, sent to its statechart and read back from the snapshot after it:
 * what each decided (the rescue, revival, growth or retirement), or the error that says why not.
 * The statechart is the one writer; these only send and read.
 */
import type { Actor, SnapshotFrom } from 'xstate';
import type { AliveCause } from '../../machines/node.machine.js';
import { isMember, joinIssue, type provideSwarm, type SwarmEvent, type SwarmOutcome } from '../../machines/swarm.machine.js';
import { describeValue } from '../core/describe.js';
import { PlanError, SwarmError } from '../core/errors.js';
import type { NodeProfile } from '../core/types.js';
import type { LifecycleCommand, LifecycleResult } from './swarm-contract.js';
import type { Growth, Rescue, Retirement, Revival, SwarmStatus } from './types.js';

type SwarmActorRef = Actor<ReturnType<typeof provideSwarm>>;
type Snapshot = SnapshotFrom<SwarmActorRef>;

/** The snapshot, if the statechart is running; else `Stopped`. */
export function runningSnapshot(actor: SwarmActorRef): Snapshot {
  const snapshot = actor.getSnapshot();
  if (snapshot.status !== 'active') {
    const why = snapshot.status === 'error' ? ` (the Swarm actor failed: ${String(snapshot.error)})` : '';
    throw new SwarmError('Stopped', `the swarm is stopped${why}; create a new one with createSwarm()`);
  }
  return snapshot;
}

/** `UnknownNode`, listing (some of) the members. */
export function unknownNode(snapshot: Snapshot, nodeId: unknown): SwarmError {
  const known = [...snapshot.context.members.keys()];
  const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, … (${known.length} nodes)` : known.join(', ');
  return new SwarmError('UnknownNode', `unknown node ${describeValue(nodeId)}: the swarm has ${list || 'no node'}`);
}

/**
 * What the statechart decided for an event on `nodeId`: its outcome, or undefined when it did
 * not take the event (the snapshot is the same object) for a member — the event was a no-op.
 * @throws {SwarmError} `UnknownNode` when it did not take it because the node is no member.
 */
function taken(before: Snapshot, after: Snapshot, nodeId: string): SwarmOutcome | undefined {
  if (after !== before) return after.context.outcome;
  if (!isMember(before.context, nodeId)) throw unknownNode(before, nodeId);
  return undefined;
}

/** The outcome of a plan change; `PlanError` when the statechart refused the telomerase's plan. */
function decided(outcome: SwarmOutcome | undefined): SwarmOutcome {
  if (outcome === undefined) throw new SwarmError('InvalidInput', 'the swarm took no decision');
  if (outcome.kind === 'refused') throw new PlanError('InvalidPlan', outcome.reason);
  return outcome;
}

/** A node down, for the statechart's `node.down` (manual, detector) or `node.eject`. */
export function takeDown(actor: SwarmActorRef, nodeId: string, event: SwarmEvent): Rescue {
  const before = runningSnapshot(actor);
  actor.send(event);
  const after = actor.getSnapshot();
  const outcome = taken(before, after, nodeId);
  if (outcome?.kind !== 'rescue') return Object.freeze({ nodeId, status: after.value as SwarmStatus, recoveries: [], unrecoverable: [] });
  return Object.freeze({ nodeId, status: after.value as SwarmStatus, recoveries: outcome.recoveries, unrecoverable: outcome.unrecoverable });
}

/** A node back, for the statechart's `node.alive` with its cause. */
export function revive(actor: SwarmActorRef, nodeId: string, cause: AliveCause, decidedByOwner: boolean): Revival {
  const before = runningSnapshot(actor);
  actor.send({ type: 'node.alive', nodeId, cause, decided: decidedByOwner });
  const after = actor.getSnapshot();
  taken(before, after, nodeId);
  return Object.freeze({ nodeId, status: after.value as SwarmStatus });
}

/** A newcomer, for the statechart's `node.added` (the telomerase decides its role). */
export function join(actor: SwarmActorRef, profile: NodeProfile): Growth {
  const before = runningSnapshot(actor);
  actor.send({ type: 'node.added', profile });
  const after = actor.getSnapshot();
  if (after === before) {
    const issue = joinIssue(before.context, profile) ?? { code: 'InvalidInput' as const, message: 'cannot add node: refused' };
    throw new SwarmError(issue.code, issue.message);
  }
  const o = decided(after.context.outcome);
  if (o.kind !== 'growth') throw new SwarmError('InvalidInput', `cannot add node: the swarm took ${o.kind} for it`);
  return Object.freeze({ nodeId: o.nodeId, role: o.role, ...(o.modelId !== undefined ? { modelId: o.modelId } : {}), pipelines: o.pipelines, replaced: o.replaced, layersMoved: o.layersMoved, status: after.value as SwarmStatus });
}

/** A retirement, for the statechart's `node.removed` (the telomerase relocates its layers). */
export function retire(actor: SwarmActorRef, nodeId: string): Retirement {
  const before = runningSnapshot(actor);
  actor.send({ type: 'node.removed', nodeId });
  const after = actor.getSnapshot();
  const o = decided(taken(before, after, nodeId));
  if (o.kind !== 'retirement') throw new SwarmError('UnknownNode', `cannot remove node "${String(nodeId)}": the swarm took ${o.kind} for it`);
  return Object.freeze({ nodeId, relocated: o.relocated, dropped: o.dropped, layersMoved: o.layersMoved, status: after.value as SwarmStatus });
}

/** Applies a lifecycle command the owner decided (a replicated log's entry, a saved event): own marks apply, never deferred. */
export function applyCommand<C extends LifecycleCommand>(actor: SwarmActorRef, command: C): LifecycleResult<C> {
  const c = command as LifecycleCommand;
  let result: Rescue | Revival | Growth | Retirement;
  if (c.type === 'node.added') result = join(actor, c.profile);
  else if (c.type === 'node.removed') result = retire(actor, c.nodeId);
  else if (c.type === 'node.alive') result = revive(actor, c.nodeId, c.cause ?? 'manual', true);
  else if (c.cause === 'ejected') result = takeDown(actor, c.nodeId, { type: 'node.eject', nodeId: c.nodeId, decided: true });
  else result = takeDown(actor, c.nodeId, { type: 'node.down', nodeId: c.nodeId, cause: c.cause ?? 'manual', decided: true });
  return result as LifecycleResult<C>;
}
