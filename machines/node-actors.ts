/** The Swarm's node actors: created in its actor system under a key, started once, found by id. */
import { createActor, type AnyActorRef } from 'xstate';
import type { NodeProfile } from '../src/core/types.js';
import { nodeMachine, type NodeRecord } from './node.machine.js';
import { downCauseOf, nodeKey, type NodeActorRef, type SwarmContext } from './swarm-context.js';

/**
 * A node actor in the Swarm's system under {@link nodeKey}, not yet started. Node actors live in
 * this keyed collection (so inspection sees them), not in the snapshot's children: xstate 5.33
 * spawns and stops children in O(N²). An id the system holds already gets that actor.
 */
export function createNodeActor(parent: AnyActorRef, p: NodeProfile, alpha: number, detection: Pick<SwarmContext, 'failureDetector' | 'ejection'>, record?: NodeRecord): NodeActorRef {
  // One per id in a system: a transition computed twice from one snapshot (a model-based test's
  // traversal) finds the one it made the first time.
  const existing = parent.system.get(nodeKey(p.id)) as NodeActorRef | undefined;
  if (existing !== undefined) return existing;
  const input = { id: p.id, alpha, ...declared(p), ejection: detection.ejection, ...(detection.failureDetector !== undefined ? { phi: detection.failureDetector } : {}), ...(record !== undefined ? { record } : {}) };
  return createActor(nodeMachine, { parent, id: nodeKey(p.id), systemId: nodeKey(p.id), input });
}

/**
 * A member's node actor, started. It is created (from the member's profile and the context's
 * settings, and `record` if given) when the system has none yet: at the Swarm's start, for a
 * newcomer, and after a snapshot restored through `createActor(machine, { snapshot })`, which
 * carries the Swarm's data and no actor. A member down is told why (unless `tell` is false: the
 * Swarm's entry tells them all), so its actor agrees.
 */
export function nodeActorOf(swarm: AnyActorRef, context: SwarmContext, nodeId: string, record?: NodeRecord, tell = true): NodeActorRef | undefined {
  const existing = swarm.system.get(nodeKey(nodeId)) as NodeActorRef | undefined;
  if (existing !== undefined && started.has(existing)) return existing;
  const m = context.members.get(nodeId);
  if (m === undefined) return undefined;
  const cause = downCauseOf(context, nodeId);
  // Its `node.down` at start re-enters the ban, which counts one more ejection.
  const held = cause === 'ejected' && record !== undefined ? { ...record, ejections: Math.max(record.ejections - 1, 0) } : record;
  const ref = existing ?? createNodeActor(swarm, m.profile, context.alpha, context, held);
  started.add(ref);
  ref.start();
  if (cause !== undefined && tell) ref.send({ type: 'node.down', cause });
  return ref;
}

/** Node actors started by {@link nodeActorOf}: one created but not yet started is started there, once. */
const started = new WeakSet<NodeActorRef>();

function declared(p: NodeProfile): { latencyMs?: number; score?: number } {
  return { ...(p.latencyMs !== undefined ? { latencyMs: p.latencyMs } : {}), ...(p.score !== undefined ? { score: p.score } : {}) };
}

