/**
 * `swarm.on`'s handlers, counted while they run: a handler runs while the statechart finishes its
 * step, so a lifecycle command from it would only be queued and could not return what it
 * decided; the Swarm refuses one while `handlers.running` is above 0 (docs/design.md §12).
 */
import type { AnyActorRef } from 'xstate';

/** Subscribes `handler` to the actor's emitted `type`, counting it in `handlers.running` while it runs; returns the unsubscribe. */
export function guardedOn(actor: Pick<AnyActorRef, 'on'>, type: string, handler: (event: never) => void, handlers: { running: number }): () => void {
  const guarded = (event: never) => {
    handlers.running++;
    try {
      handler(event);
    } finally {
      handlers.running--;
    }
  };
  const subscription = actor.on(type as never, guarded);
  return () => subscription.unsubscribe();
}
