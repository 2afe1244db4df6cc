/**
 * The Swarm actor as the public sees it: a read-only handle for inspection. It reads (snapshots,
 * the persisted snapshot, subscriptions, emitted events, the actors of its system), and sends
 * nothing: a node actor sent an event behind the statechart would disagree with it. Commands go
 * through the Swarm's methods.
 */
import type { Actor, AnyActorRef } from 'xstate';
import type { provideSwarm } from '../../machines/swarm.machine.js';

type RunningActor = Actor<ReturnType<typeof provideSwarm>>;

/** An actor of the swarm's system, read only. */
export type ReadOnlyActor = Pick<AnyActorRef, 'id' | 'sessionId' | 'getSnapshot' | 'getPersistedSnapshot' | 'subscribe'>;

/** The read-only inspection handle of a running Swarm (`swarm.actor`). */
export interface SwarmActor extends Pick<RunningActor, 'id' | 'sessionId' | 'getSnapshot' | 'getPersistedSnapshot' | 'subscribe' | 'on'> {
  /** The swarm's actor system, read only: `system.get(nodeKey(id))` is a node actor to inspect. */
  readonly system: { get(systemId: string): ReadOnlyActor | undefined };
}

/** A read-only view of an actor: the same reads, no `send`, no `start` or `stop`. */
function readOnly(ref: AnyActorRef): ReadOnlyActor {
  return {
    id: ref.id,
    sessionId: ref.sessionId,
    getSnapshot: () => ref.getSnapshot(),
    getPersistedSnapshot: () => ref.getPersistedSnapshot(),
    subscribe: ((...args: Parameters<AnyActorRef['subscribe']>) => (ref.subscribe as (...a: typeof args) => ReturnType<AnyActorRef['subscribe']>)(...args)) as AnyActorRef['subscribe'],
  };
}

/** The read-only handle over a running Swarm actor. */
export function inspectionHandle(actor: RunningActor): SwarmActor {
  return Object.freeze({
    id: actor.id,
    sessionId: actor.sessionId,
    getSnapshot: () => actor.getSnapshot(),
    getPersistedSnapshot: () => actor.getPersistedSnapshot(),
    subscribe: actor.subscribe.bind(actor),
    on: actor.on.bind(actor),
    system: Object.freeze({
      get: (systemId: string) => {
        const ref = actor.system.get(systemId) as AnyActorRef | undefined;
        return ref === undefined ? undefined : readOnly(ref);
      },
    }),
  }) as SwarmActor;
}
