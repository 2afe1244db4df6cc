/** Session options: checked, defaults filled in; and the clock a session runs on. */
import { unknownKey, unknownKeyMessage } from '../core/arguments.js';
import { describeValue, isRecordLike } from '../core/describe.js';
import { SessionError } from '../core/errors.js';
import type { ResumePreference } from '../core/resume.js';
import type { HistoryOverflow, SessionHost, SessionOptions, StageRunner, StepOptions, TimerClock } from './session-types.js';

/** Every tuning option of a session, with its default. */
export interface ResolvedSessionOptions {
  readonly stageTimeoutMs: number;
  readonly replayTimeoutMsPerInput: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly maxHistory: number;
  readonly historyOverflow: HistoryOverflow;
  readonly aliveCheckMs: number;
  readonly allowDegraded: boolean;
  readonly prefer: ResumePreference;
  readonly onFailure: 'resume' | 'restart';
  /** The admission band of an admitted session; undefined: not admitted (docs/admission.md). */
  readonly priority: number | undefined;
}

/** Why a session host is unusable, in words; undefined when it has every method a session calls. */
export function sessionHostIssue(host: unknown): string | undefined {
  if (host === null || typeof host !== 'object') return `the session host must be an object { route, reserve, release, state, clock }, got ${describeValue(host)}`;
  const h = host as Partial<Record<keyof SessionHost, unknown>>;
  for (const key of ['route', 'reserve', 'release', 'state'] as const) if (typeof h[key] !== 'function') return `the session host's "${key}" must be a function`;
  for (const key of ['assertRunning', 'stageFailed', 'watch'] as const) if (h[key] !== undefined && typeof h[key] !== 'function') return `the session host's "${key}" must be a function when given`;
  const clock = h.clock as Partial<TimerClock> | null | undefined;
  if (clock === null || typeof clock !== 'object' || typeof clock.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
    return `the session host's "clock" must have now(), setTimeout() and clearTimeout()`;
  }
  return undefined;
}

const SESSION_OPTION_KEYS: readonly string[] = Object.freeze(Object.keys({
  stageTimeoutMs: 0, replayTimeoutMsPerInput: 0, retries: 0, backoffMs: 0, maxBackoffMs: 0, deadlineMs: 0, signal: 0,
  maxHistory: 0, historyOverflow: 0, aliveCheckMs: 0, allowDegraded: 0, prefer: 0, onFailure: 0, clock: 0, priority: 0, dropSession: 0, historyBytes: 0,
} satisfies Record<keyof SessionOptions, 0>));

const STEP_OPTION_KEYS: readonly string[] = Object.freeze(Object.keys({ signal: 0 } satisfies Record<keyof StepOptions, 0>));

/**
 * The longest delay a timer takes (2^31 − 1 ms, about 24.8 days): Node and browsers fire a longer
 * one at once, so a timeout past it would fail every call at the first millisecond.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Why the options (or the runner) are unusable, in words; undefined when they are fine. */
export function sessionOptionsIssue(runStage: unknown, options: SessionOptions): string | undefined {
  if (typeof runStage !== 'function') return 'runStage must be a function (stage, input, { signal, replay }) => output';
  if (!isRecordLike(options)) return `session options must be an object, got ${describeValue(options)}`;
  // An unknown key is most likely a misspelt option: refusing it beats silently using the default.
  const unknown = unknownKey(options, SESSION_OPTION_KEYS);
  if (unknown !== undefined) return unknownKeyMessage('session options', unknown, SESSION_OPTION_KEYS);
  // A timeout or a deadline may be Infinity (none); a finite one must fit a timer.
  for (const key of ['stageTimeoutMs', 'deadlineMs'] as const) {
    const v = options[key];
    if (v !== undefined && !(typeof v === 'number' && v > 0 && (v <= MAX_TIMER_MS || v === Infinity))) return `session option "${key}" must be a number > 0, at most ${MAX_TIMER_MS} or Infinity, got ${describeValue(v)}`;
  }
  const alive = options.aliveCheckMs;
  if (alive !== undefined && !(typeof alive === 'number' && alive > 0 && alive <= MAX_TIMER_MS)) return `session option "aliveCheckMs" must be a number > 0 and at most ${MAX_TIMER_MS}, got ${describeValue(alive)}`;
  const history = options.maxHistory;
  if (history !== undefined && !(typeof history === 'number' && history > 0)) return `session option "maxHistory" must be a number > 0, got ${describeValue(history)}`;
  for (const key of ['retries', 'backoffMs', 'maxBackoffMs', 'replayTimeoutMsPerInput'] as const) {
    const v = options[key];
    if (v !== undefined && !(typeof v === 'number' && v >= 0 && v <= MAX_TIMER_MS)) return `session option "${key}" must be a number from 0 to ${MAX_TIMER_MS}, got ${describeValue(v)}`;
  }
  if (options.retries !== undefined && !Number.isInteger(options.retries)) return `session option "retries" must be an integer, got ${describeValue(options.retries)}`;
  if (options.allowDegraded !== undefined && typeof options.allowDegraded !== 'boolean') return `session option "allowDegraded" must be a boolean, got ${describeValue(options.allowDegraded)}`;
  const bytes = options.historyBytes as { max?: unknown; sizeOf?: unknown } | undefined;
  if (bytes !== undefined && (typeof bytes !== 'object' || bytes === null || typeof bytes.max !== 'number' || !(bytes.max >= 0) || typeof bytes.sizeOf !== 'function')) return `session option "historyBytes" must be { max: a number >= 0, sizeOf: a function }, got ${describeValue(options.historyBytes)}`;
  if (options.historyOverflow !== undefined && options.historyOverflow !== 'fail' && options.historyOverflow !== 'slide') return `session option "historyOverflow" must be "fail" or "slide", got ${describeValue(options.historyOverflow)}`;
  if (options.onFailure !== undefined && options.onFailure !== 'resume' && options.onFailure !== 'restart') return `session option "onFailure" must be "resume" or "restart", got ${describeValue(options.onFailure)}`;
  if (options.prefer !== undefined && options.prefer !== 'keep' && options.prefer !== 'suffix') return `session option "prefer" must be "keep" or "suffix", got ${describeValue(options.prefer)}`;
  const clock = options.clock as Partial<TimerClock> | undefined;
  if (clock !== undefined && (typeof clock.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function')) return 'session option "clock" must have now(), setTimeout() and clearTimeout()';
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) return 'session option "signal" must be an AbortSignal';
  const priority = options.priority;
  if (priority !== undefined && !(typeof priority === 'number' && Number.isFinite(priority) && Math.abs(priority) <= 1e9)) return `session option "priority" must be a finite number (at most 1e9 either way), got ${describeValue(priority)}`;
  if (options.dropSession !== undefined && typeof options.dropSession !== 'function') return `session option "dropSession" must be a function (nodeId, sessionId) => void, got ${describeValue(options.dropSession)}`;
  return undefined;
}

/**
 * Checks `session.step`'s options: an object whose only key is `signal`, an AbortSignal when given.
 * @throws {SessionError} `InvalidInput` naming the key.
 */
export function checkStepOptions(options: StepOptions): void {
  if (!isRecordLike(options)) throw new SessionError('InvalidInput', `step options must be an object { signal? }, got ${describeValue(options)}`);
  const unknown = unknownKey(options, STEP_OPTION_KEYS);
  if (unknown !== undefined) throw new SessionError('InvalidInput', unknownKeyMessage('step options', unknown, STEP_OPTION_KEYS));
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new SessionError('InvalidInput', `step options: "signal" must be an AbortSignal, got ${describeValue(options.signal)}`);
}

/**
 * The options with every default filled in.
 * @throws {SessionError} `InvalidInput` naming the bad option.
 */
export function resolveSessionOptions(runStage: StageRunner<never> | unknown, options: SessionOptions): ResolvedSessionOptions {
  const issue = sessionOptionsIssue(runStage, options);
  if (issue !== undefined) throw new SessionError('InvalidInput', issue);
  const stageTimeoutMs = options.stageTimeoutMs ?? 30_000;
  return {
    stageTimeoutMs,
    replayTimeoutMsPerInput: options.replayTimeoutMsPerInput ?? stageTimeoutMs / 16,
    retries: options.retries ?? 3,
    backoffMs: options.backoffMs ?? 25,
    maxBackoffMs: options.maxBackoffMs ?? 1000,
    maxHistory: options.maxHistory ?? 4096,
    historyOverflow: options.historyOverflow ?? 'fail',
    aliveCheckMs: options.aliveCheckMs ?? 100,
    allowDegraded: options.allowDegraded ?? false,
    prefer: options.prefer ?? 'keep',
    onFailure: options.onFailure ?? 'resume',
    priority: options.priority,
  };
}

/**
 * The clock a session runs on: `clock` itself when it has timers, else its `now` with the
 * process's timers (a clock without timers cannot fire a stage timeout in virtual time).
 */
export function timerClock(clock: { now(): number } & Partial<Pick<TimerClock, 'setTimeout' | 'clearTimeout'>>): TimerClock {
  if (typeof clock.setTimeout === 'function' && typeof clock.clearTimeout === 'function') return clock as TimerClock;
  return {
    now: () => clock.now(),
    setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
    clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
  };
}
