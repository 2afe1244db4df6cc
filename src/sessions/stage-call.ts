/**
 * One call of one stage of a session, raced against everything that ends it early: its timeout,
 * its node going down, the session's deadline, an abort signal, and `close()`. Timers come from the
 * session's clock, so the race runs in virtual time under a simulation.
 */
import { SessionError, type StageAttempt, type StageAttemptOutcome } from '../core/errors.js';
import type { Stage } from '../core/types.js';
import { NodeBusyError } from './node-busy.js';
import { StateLostError } from './state-lost.js';
import type { SessionStage, StageContext, StageRunner, TimerClock } from './session-types.js';

/** How a call ended: the output (and the replay outputs the runner handed back), or why not. */
export type CallResult<T> =
  | { readonly ok: true; readonly output: T; readonly replayOutputs: readonly T[] | undefined }
  | { readonly ok: false; readonly outcome: Exclude<StageAttemptOutcome, 'ok'>; readonly error?: unknown };

/** Everything one call needs. */
export interface StageCall<T> {
  readonly runStage: StageRunner<T>;
  readonly stage: SessionStage;
  readonly input: T;
  readonly replay: readonly T[];
  readonly fresh: boolean;
  readonly step: number;
  readonly clock: TimerClock;
  /** The call fails past this many ms (Infinity: never). */
  readonly timeoutMs: number;
  /** The session's deadline, in clock time (Infinity: none). */
  readonly deadlineAt: number;
  /** How often to check `isDown` when there is no `watch`. */
  readonly aliveCheckMs: number;
  /** Aborting any of them gives the call up with outcome `aborted`. */
  readonly signals: readonly AbortSignal[];
  /** Whether the stage's node is down now. */
  readonly isDown: () => boolean;
  /** Calls `onDown` if the node goes down; returns an unsubscribe. Without it, `isDown` is polled. */
  readonly watch?: (onDown: () => void) => () => void;
  /** Receives the function that gives the call up at once (for `close()`), then undefined when it settles. */
  readonly interruptible: (interrupt: (() => void) | undefined) => void;
  /** Why the session was interrupted, if it was (then the call does not start). */
  readonly interrupted: () => unknown;
}

/**
 * Runs one stage call. Never rejects: a failure is a result with its outcome. The runner's
 * `signal` aborts when the call is given up; it is created only if the runner reads it.
 */
export function callStage<T>(call: StageCall<T>): Promise<CallResult<T>> {
  const { clock, signals, stage } = call;
  return new Promise<CallResult<T>>((resolve) => {
    // An AbortController per call is costly: made only if the runner reads `signal`.
    let controller: AbortController | undefined;
    let givenUp: SessionError | undefined;
    let settled = false;
    let timeout: unknown;
    let deadline: unknown;
    let poll: unknown;
    let unwatch: (() => void) | undefined;
    const onAbort = () => finish({ ok: false, outcome: 'aborted', error: signals.find((x) => x.aborted)?.reason ?? call.interrupted() });
    const finish = (result: CallResult<T>) => {
      if (settled) return;
      settled = true;
      if (timeout !== undefined) clock.clearTimeout(timeout);
      if (deadline !== undefined) clock.clearTimeout(deadline);
      if (poll !== undefined) clock.clearTimeout(poll);
      unwatch?.();
      for (const signal of signals) signal.removeEventListener('abort', onAbort);
      call.interruptible(undefined);
      if (!result.ok) {
        givenUp = new SessionError('Aborted', `stage ${stage.stageIndex} on node "${stage.nodeId}" was given up: ${result.outcome}`);
        controller?.abort(givenUp);
      }
      resolve(result);
    };
    if (signals.some((x) => x.aborted) || call.interrupted() !== undefined) return onAbort();
    call.interruptible(onAbort);
    if (clock.now() >= call.deadlineAt) return finish({ ok: false, outcome: 'deadline' });
    if (call.isDown()) return finish({ ok: false, outcome: 'node-down' });
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
    if (Number.isFinite(call.timeoutMs)) timeout = clock.setTimeout(() => finish({ ok: false, outcome: 'timeout' }), call.timeoutMs);
    if (Number.isFinite(call.deadlineAt)) deadline = clock.setTimeout(() => finish({ ok: false, outcome: 'deadline' }), Math.max(call.deadlineAt - clock.now(), 0));
    if (call.watch !== undefined) {
      unwatch = call.watch(() => finish({ ok: false, outcome: 'node-down' }));
    } else {
      const check = () => {
        poll = undefined;
        if (call.isDown()) finish({ ok: false, outcome: 'node-down' });
        else if (!settled) poll = clock.setTimeout(check, call.aliveCheckMs);
      };
      poll = clock.setTimeout(check, call.aliveCheckMs);
    }
    let replayOutputs: readonly T[] | undefined;
    const context: StageContext<T> = {
      get signal() {
        if (controller === undefined) {
          controller = new AbortController();
          if (givenUp !== undefined) controller.abort(givenUp);
        }
        return controller.signal;
      },
      replay: call.replay,
      fresh: call.fresh,
      step: call.step,
      replayed: (outputs) => {
        replayOutputs = [...outputs];
      },
    };
    let pending: Promise<T>;
    try {
      pending = Promise.resolve(call.runStage(stage, call.input, context));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (output) => finish({ ok: true, output, replayOutputs }),
      (error: unknown) => finish({ ok: false, outcome: error instanceof NodeBusyError ? 'busy' : error instanceof StateLostError ? 'lost' : 'rejected', error }),
    );
  });
}

/** The record of one call, for a {@link SessionError}'s `attempts`. */
export function attemptOf<T>(step: number, stageIndex: number, stage: Stage, result: CallResult<T>, replayed: number): StageAttempt {
  const base = { step, stageIndex, nodeId: stage.nodeId, layerStart: stage.layerStart, layerEnd: stage.layerEnd, replayed };
  if (result.ok) return { ...base, outcome: 'ok' };
  const error = result.error instanceof Error ? result.error.message : result.error === undefined ? undefined : String(result.error);
  return { ...base, outcome: result.outcome, ...(error !== undefined ? { error } : {}) };
}

/** The failed calls, in words, for an error message. */
export function describeFailures(attempts: readonly StageAttempt[]): string {
  return attempts.filter((a) => a.outcome !== 'ok').map((a) => `stage ${a.stageIndex} [${a.layerStart}, ${a.layerEnd}) on "${a.nodeId}": ${a.outcome}${a.error !== undefined ? ` (${a.error})` : ''}`).join('; ');
}
