/**
 * The nodes that hold a session's state, and the session-close hook that tells them to drop it
 * (docs/sessions.md, "Ending a session: dropSession"). A node is a holder from the moment a stage
 * call of the session is sent to it, whether that call answered or not: a call given up on may
 * still have built caches there.
 */

/**
 * Tells node `nodeId` to drop what it holds of session `sessionId` (its caches for every layer).
 * Called once per holder when the session ends, after its running call (if any) was given up.
 */
export type DropSession = (nodeId: string, sessionId: string) => void;

/** The holders of one session; {@link StateHolders.drop} tells each of them once. */
export class StateHolders {
  private readonly nodes = new Set<string>();
  private dropped = false;

  constructor(
    private readonly sessionId: () => string,
    private readonly hook: DropSession | undefined,
  ) {}

  /** A stage call of the session goes to `nodeId`. */
  add(nodeId: string): void {
    if (this.hook !== undefined && !this.dropped) this.nodes.add(nodeId);
  }

  /**
   * The session ended: every holder, in the order it was first called, is told to drop the
   * session's state, once. A hook that throws is the hook's problem, not the session's: the
   * session still ends cleanly (its lease released), and the other holders are still told.
   */
  drop(): void {
    if (this.dropped) return;
    this.dropped = true;
    const hook = this.hook;
    if (hook === undefined) return;
    const id = this.sessionId();
    for (const nodeId of this.nodes) {
      try {
        hook(nodeId, id);
      } catch {
        // best effort: a node that is not told keeps the state until its own eviction
      }
    }
    this.nodes.clear();
  }
}
