/**
 * The types of sessions (docs/sessions.md): what a session needs from its swarm, what it hands
 * the user's stage runner, and how it is tuned.
 */
import type { AdmitOptions } from '../core/admission-config.js';
import type { ResumePreference } from '../core/resume.js';
import type { StageAttempt } from '../core/errors.js';
import type { Route, SwarmStateLike } from '../core/types.js';
import type { Lease, LeasedRoute, ReleaseOutcome, SwarmRequest } from '../runtime/types.js';

/** A clock with timers: `now` for measuring, `setTimeout`/`clearTimeout` for stage timeouts, backoff and liveness checks. */
export interface TimerClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * The narrow view of a swarm a session runs on. `Swarm` provides it; a test or another runtime
 * can too.
 */
export interface SessionHost {
  /** Routes and reserves the session's first route. */
  route(request: SwarmRequest, options: { reserve: true }): LeasedRoute;
  /**
   * Reserves a given route (a resumed one): its nodes count the session as in flight. With the
   * session's request, a swarm's host lets the copy the route runs on learn its prompt (docs/prefix-cache.md).
   */
  reserve(route: Route, request?: SwarmRequest): LeasedRoute;
  /** Ends a reservation; `{ ok: false }` reports a failure. */
  release(lease: Lease, outcome: ReleaseOutcome): void;
  /** Current plan and telemetry: who is alive. */
  state(): SwarmStateLike;
  readonly clock: TimerClock;
  /** Throws when the swarm can serve no more (stopped); called before each step. Optional. */
  assertRunning?(): void;
  /**
   * Told which node failed a stage call and how, before the session reroutes: where a failure
   * detector plugs in. With it, the failed route's lease is released with no outcome (the hook has
   * the failure, charged to the one node that failed); without it the failure reaches the swarm as
   * `release(lease, { ok: false })`, which charges every node of the route. A swarm's own sessions
   * feed it to the failed node's latency (`failurePenaltyMs`).
   */
  stageFailed?(nodeId: string, outcome: StageAttempt['outcome']): void;
  /**
   * Calls `onDown` once if `nodeId` goes down; returns an unsubscribe. Optional: without it a
   * running stage's node is checked every `aliveCheckMs`.
   */
  watch?(nodeId: string, onDown: () => void): () => void;
  /**
   * Admission (docs/admission.md): a leased route once one has room, `route` alone when given (a
   * resumed route). Needed by a session with a `priority`; a swarm's host has it.
   */
  admit?(request: SwarmRequest, options: AdmitOptions, route?: Route): Promise<LeasedRoute>;
  /** An admitted session's first route and id, before its first step is admitted: the router's choice, and a fresh lease id. */
  choose?(request: SwarmRequest): { readonly route: Route; readonly id: string };
}

/** The stage a runner is asked to run. */
export interface SessionStage {
  readonly nodeId: string;
  readonly modelId: string;
  /** First layer, inclusive. */
  readonly layerStart: number;
  /** Last layer, exclusive. */
  readonly layerEnd: number;
  /** Position in the session's current route. */
  readonly stageIndex: number;
  readonly sessionId: string;
}

/** What a runner gets besides the stage and its input. */
export interface StageContext<T> {
  /** Aborted when the session gives up on this call (timeout, node down, deadline, abort, close). */
  readonly signal: AbortSignal;
  /**
   * On a replacement stage's first call: the session's earlier inputs for this stage's first layer,
   * oldest first, to run as one batch (like a prefill) before `input`, so the node can rebuild its
   * state for the session. Empty on every later call.
   */
  readonly replay: readonly T[];
  /**
   * True on this stage's first call in the session: whatever its node holds of the session for
   * these layers is stale; start afresh from `replay`.
   */
  readonly fresh: boolean;
  /** The session's step (0-based). */
  readonly step: number;
  /**
   * Hand the session this stage's outputs for `replay`, in order. Needed when the next stage is
   * a replacement too and starts at a layer the session has no history for (a boundary inside
   * the failed span): its replay is these outputs. Call it before resolving.
   */
  replayed(outputs: readonly T[]): void;
}

/** Runs one stage of one step: the user's call to the node. May return the output or a promise of it. */
export type StageRunner<T> = (stage: SessionStage, input: T, context: StageContext<T>) => T | Promise<T>;

/** What to do past `maxHistory` steps of history. */
export type HistoryOverflow = 'fail' | 'slide';

/** Options of `swarm.session` and `swarm.execute`. */
export interface SessionOptions {
  /** A stage call that takes longer fails (and the session resumes elsewhere). @defaultValue 30000 */
  readonly stageTimeoutMs?: number;
  /** Extra time a call gets per replayed input. @defaultValue stageTimeoutMs / 16 */
  readonly replayTimeoutMsPerInput?: number;
  /** Resumes allowed per step; one more failure rejects the step. @defaultValue 3 */
  readonly retries?: number;
  /**
   * Wait before the first resume of a step; doubles for each further one. None when the swarm
   * already counts the failed node down: the new route avoids it, waiting would only add latency.
   * @defaultValue 25
   */
  readonly backoffMs?: number;
  /** @defaultValue 1000 */
  readonly maxBackoffMs?: number;
  /** The whole session must finish within this many ms of opening. @defaultValue none */
  readonly deadlineMs?: number;
  /** Aborting it cancels the running stage and fails the session. */
  readonly signal?: AbortSignal;
  /**
   * Admit the session (docs/admission.md): its first step waits for `swarm.admit` in this band
   * under the session's deadline and signal, and a resumed step waits at the head of its band
   * rather than fail for want of a slot. @defaultValue none: leased at once, as `route` does
   */
  readonly priority?: number;
  /**
   * Steps of history kept per stage boundary for replay. @defaultValue 4096
   * Past it, see `historyOverflow`.
   */
  readonly maxHistory?: number;
  /**
   * `fail` (default): the oldest inputs are dropped, and a replacement that would need them
   * cannot be rebuilt, so a failure after that fails the session with `HistoryTruncated` rather
   * than let a node compute on a partial state. `slide`: the replay is the last `maxHistory`
   * inputs, for models that attend to a sliding window only.
   */
  readonly historyOverflow?: HistoryOverflow;
  /**
   * A bound in bytes on the history kept at the route's later boundaries (the activations between
   * stages), with the size of one input. Past it, those boundaries' inputs are dropped (the
   * first layer's, the step inputs, are always kept), and a later failure recomputes from the
   * first layer: every stage of the new route rebuilt from the step inputs instead of the
   * failed stage alone from its boundary (docs/sessions.md, "Bounded history"). @defaultValue none
   */
  readonly historyBytes?: { readonly max: number; readonly sizeOf: (input: unknown) => number };
  /** How often a running stage's node is checked for being down, when the host cannot tell. @defaultValue 100 */
  readonly aliveCheckMs?: number;
  /** Continue with layers missing when no live node holds them (a wrong answer, marked degraded). @defaultValue false */
  readonly allowDegraded?: boolean;
  /** How remaining layers are re-routed after a failure (see `resumeRoute`). @defaultValue 'keep' */
  readonly prefer?: ResumePreference;
  /**
   * `resume` (default): continue from the failed stage. `restart`: what the original design does —
   * route again and rerun the whole step from the first stage, every stage replaying the whole
   * history; kept for comparison (the load simulation's W6).
   */
  readonly onFailure?: 'resume' | 'restart';
  /** Overrides the swarm's clock (it must have timers). */
  readonly clock?: TimerClock;
  /**
   * The session-close hook: called once for every node a stage call of this session was sent to,
   * when the session ends (closed, failed, aborted, past its deadline), after its running call was
   * given up, so the node drops the session's state (docs/sessions.md, "Ending a session"). It must
   * not throw (a throw is ignored) and should not wait: send the word and return.
   */
  readonly dropSession?: (nodeId: string, sessionId: string) => void;
}

/** Options of one `session.step`. */
export interface StepOptions {
  /** Aborting it cancels this step's running stage and fails the session. */
  readonly signal?: AbortSignal;
}

/** Counters of a session, for reports and tests. */
export interface SessionStats {
  readonly sessionId: string;
  readonly steps: number;
  /** Times a failed stage was re-routed (resumed or restarted). */
  readonly resumes: number;
  /** Stage calls made, including failed ones. */
  readonly calls: number;
  /** Inputs sent as replay, summed over calls. */
  readonly replayedInputs: number;
  /** Layer-steps sent as replay: Σ replayed inputs × the stage's layers. */
  readonly replayedLayerSteps: number;
  /** Layer-steps run on fresh inputs by calls that succeeded (a step rerun after a restart counts again). */
  readonly freshLayerSteps: number;
  readonly state: 'open' | 'closed' | 'failed';
}
