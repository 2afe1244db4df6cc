/**
 * The agent's side of cancellation (docs/serve.md, "Cancellation"): the stage calls running per
 * session, so a dropped session's calls stop at once, and the sessions dropped lately, so a stage
 * call of one that arrives after its drop (the two travel on different connections) builds nothing.
 */
import type { TimeSource } from '../runtime/types.js';
import { ServeError } from '../wire/serve-error.js';

/** How long a dropped session's id is remembered, in ms of the agent's clock. */
export const DROP_MEMORY_MS = 10_000;
/** At most this many dropped ids are remembered; the oldest go first. */
export const DROP_MEMORY_MAX = 8192;

/** Stage calls running per session and the sessions dropped lately, bounded. */
export class SessionDrops {
  /** Session id → the running calls' controllers. */
  private readonly running = new Map<string, Set<AbortController>>();
  /** Session id → when it was dropped; insertion order is age order. */
  private readonly dropped = new Map<string, number>();
  /** Drops received, for the health answer. */
  drops = 0;

  constructor(
    private readonly clock: TimeSource,
    private readonly memoryMs = DROP_MEMORY_MS,
    private readonly memoryMax = DROP_MEMORY_MAX,
  ) {}

  /**
   * A stage call of `sessionId` starts: its controller aborts when the session is dropped.
   * @throws {ServeError} 409 `UnknownSession` when the session was dropped lately
   */
  begin(sessionId: string, agentId: string): AbortController {
    this.forgetOld();
    if (this.dropped.has(sessionId)) throw new ServeError('UnknownSession', 409, `agent "${agentId}" dropped session "${sessionId}" (its orchestrator ended it); open a new session`, { field: 'sessionId' });
    const controller = new AbortController();
    let calls = this.running.get(sessionId);
    if (calls === undefined) this.running.set(sessionId, (calls = new Set()));
    calls.add(controller);
    return controller;
  }

  /** The call of {@link begin} ended. */
  end(sessionId: string, controller: AbortController): void {
    const calls = this.running.get(sessionId);
    if (calls === undefined) return;
    calls.delete(controller);
    if (calls.size === 0) this.running.delete(sessionId);
  }

  /** Drops `sessionId`: its running calls abort, and calls of it arriving within the memory are refused. */
  drop(sessionId: string): void {
    this.drops++;
    this.forgetOld();
    this.dropped.delete(sessionId);
    this.dropped.set(sessionId, this.clock.now());
    while (this.dropped.size > this.memoryMax) this.dropped.delete(this.dropped.keys().next().value as string);
    const calls = this.running.get(sessionId);
    this.running.delete(sessionId);
    for (const controller of calls ?? []) controller.abort(new ServeError('UnknownSession', 409, `session "${sessionId}" was dropped during the call`, { field: 'sessionId' }));
  }

  /** Stage calls running now. */
  runningCalls(): number {
    let n = 0;
    for (const calls of this.running.values()) n += calls.size;
    return n;
  }

  private forgetOld(): void {
    const before = this.clock.now() - this.memoryMs;
    for (const [id, at] of this.dropped) {
      if (at > before) break;
      this.dropped.delete(id);
    }
  }
}
