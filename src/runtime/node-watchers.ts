/**
 * Who waits on which node going down: the push a session's running stage call listens to instead
 * of polling the swarm's state (docs/sessions.md, "What a failure is").
 */

/**
 * Callbacks per node, each called at most once: when the node goes down (or leaves the swarm).
 * Notifying a node forgets its callbacks; an unsubscribe after that, or twice, does nothing.
 */
export class NodeWatchers {
  private readonly byNode = new Map<string, Set<() => void>>();

  /** Calls `onDown` when `nodeId` is next notified; returns the unsubscribe. */
  watch(nodeId: string, onDown: () => void): () => void {
    // A wrapper per call, so the same function watched twice is two subscriptions.
    const entry = () => onDown();
    let set = this.byNode.get(nodeId);
    if (set === undefined) {
      set = new Set();
      this.byNode.set(nodeId, set);
    }
    set.add(entry);
    const mine = set;
    return () => {
      mine.delete(entry);
      if (mine.size === 0 && this.byNode.get(nodeId) === mine) this.byNode.delete(nodeId);
    };
  }

  /** `nodeId` went down: calls and forgets every callback waiting on it, in subscription order. */
  notify(nodeId: string): void {
    const set = this.byNode.get(nodeId);
    if (set === undefined) return;
    this.byNode.delete(nodeId);
    for (const onDown of [...set]) onDown();
    set.clear();
  }

  /** Subscriptions still waiting, over every node. */
  get size(): number {
    let n = 0;
    for (const set of this.byNode.values()) n += set.size;
    return n;
  }
}
