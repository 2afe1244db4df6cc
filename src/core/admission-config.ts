/**
 * Admission's configuration (`config.admission`) and the checks of `swarm.admit`'s options, as
 * pure functions: each names the field it refuses (docs/admission.md, docs/inputs.md).
 */
import { describeValue, isRecordLike } from './describe.js';
import { RoutingError } from './errors.js';
import { unknownKey, unknownKeyMessage } from './arguments.js';

/** How `swarm.admit` queues when no copy has room (docs/admission.md). */
export interface AdmissionConfig {
  /** Waiters held at most, all bands together; past it the lowest band's newest waiter (or the arrival) is refused `Saturated`. @defaultValue 1024 */
  readonly queueSize?: number;
  /** Order within a band: first come first served, or earliest deadline first (no deadline last). @defaultValue 'fifo' */
  readonly order?: 'fifo' | 'deadline';
  /**
   * Minimum share of admissions per band, keyed by priority (`{ "0": 0.3 }`): a band under its
   * share over the last `window` admissions is served before higher bands. Shares sum to at most 1.
   * @defaultValue none: bands are strict
   */
  readonly shares?: Readonly<Record<string, number>>;
  /** How many recent admissions the shares are counted over. @defaultValue 100 */
  readonly window?: number;
  /**
   * The share of the swarm's capacity this swarm admits, in (0, 1]: a replica of N live
   * orchestrators admits 1/N until reservations are shared (docs/replication.md). @defaultValue 1
   */
  readonly share?: number;
  /**
   * How far past its slots a node is admitted, ≥ 1: a request holds its lease through its hops
   * and while it waits between stages, when it occupies no slot, so a cap of exactly the slots
   * leaves nodes idle; 1.25 lets each node queue a quarter of its slots. @defaultValue 1
   */
  readonly headroom?: number;
}

/** `swarm.admit`'s options. */
export interface AdmitOptions {
  /** Higher is served first; below 0 is sheddable: refused while saturated. @defaultValue 0 */
  readonly priority?: number;
  /** Give up after this many ms from the call (`DeadlineExceeded`). @defaultValue none */
  readonly deadlineMs?: number;
  /** Aborting it withdraws the request (`Aborted`). */
  readonly signal?: AbortSignal;
  /** The request already holds work done (a resumed session step): it enters at the head of its band. @defaultValue false */
  readonly resumed?: boolean;
}

/** The keys of {@link AdmissionConfig}. */
export const ADMISSION_KEYS: readonly string[] = Object.freeze(['queueSize', 'order', 'shares', 'window', 'share', 'headroom']);
/** The keys of {@link AdmitOptions}. */
export const ADMIT_OPTION_KEYS: readonly string[] = Object.freeze(['priority', 'deadlineMs', 'signal', 'resumed']);
/** The most waiters a queue may be configured to hold. */
export const MAX_QUEUE_SIZE = 1_000_000;

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** What is wrong with `config.admission`, or undefined. */
export function admissionConfigIssue(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (!isRecordLike(value)) return `config "admission" must be an object { queueSize?, order?, shares?, window?, share?, headroom? }, got ${describeValue(value)}`;
  const unknown = unknownKey(value, ADMISSION_KEYS);
  if (unknown !== undefined) return unknownKeyMessage('config "admission"', unknown, ADMISSION_KEYS);
  const { queueSize, order, shares, window, share, headroom } = value as AdmissionConfig;
  const bad = (field: string, rule: string, v: unknown) => `config "admission.${field}" must be ${rule}, got ${describeValue(v)}`;
  if (headroom !== undefined && !(isNumber(headroom) && headroom >= 1 && headroom <= 100)) return bad('headroom', 'a number from 1 to 100', headroom);
  if (queueSize !== undefined && !(Number.isInteger(queueSize) && queueSize >= 0 && queueSize <= MAX_QUEUE_SIZE)) return bad('queueSize', `an integer from 0 to ${MAX_QUEUE_SIZE}`, queueSize);
  if (order !== undefined && order !== 'fifo' && order !== 'deadline') return bad('order', '"fifo" or "deadline"', order);
  if (window !== undefined && !(Number.isInteger(window) && window >= 1 && window <= 100_000)) return bad('window', 'an integer from 1 to 100000', window);
  if (share !== undefined && !(isNumber(share) && share > 0 && share <= 1)) return bad('share', 'a number in (0, 1]', share);
  if (shares !== undefined) {
    if (!isRecordLike(shares)) return `config "admission.shares" must be an object { "<priority>": share }, got ${describeValue(shares)}`;
    let sum = 0;
    for (const key in shares) {
      const s = (shares as Record<string, unknown>)[key];
      if (!isNumber(Number(key)) || key.trim() === '') return `config "admission.shares": key ${describeValue(key)} must be a priority (a number)`;
      if (!(isNumber(s) && s >= 0 && s <= 1)) return bad(`shares.${key}`, 'a number from 0 to 1', s);
      sum += s;
    }
    if (sum > 1 + 1e-9) return `config "admission.shares" must sum to at most 1, got ${sum}`;
  }
  return undefined;
}

/**
 * Checks `swarm.admit`'s options, each field read once; returns them as plain data.
 * @throws {RoutingError} `InvalidRequest` naming the key.
 */
export function checkAdmitOptions(options: unknown): { priority: number; deadlineMs: number | undefined; signal: AbortSignal | undefined; resumed: boolean } {
  if (options === undefined) return { priority: 0, deadlineMs: undefined, signal: undefined, resumed: false };
  if (!isRecordLike(options)) throw new RoutingError('InvalidRequest', `admit options must be an object { priority?, deadlineMs?, signal?, resumed? }, got ${describeValue(options)}`);
  const bad = unknownKey(options, ADMIT_OPTION_KEYS);
  if (bad !== undefined) throw new RoutingError('InvalidRequest', unknownKeyMessage('admit options', bad, ADMIT_OPTION_KEYS));
  const { priority, deadlineMs, signal, resumed } = options as Record<string, unknown>;
  if (priority !== undefined && !(isNumber(priority) && Math.abs(priority) <= 1e9)) throw new RoutingError('InvalidRequest', `admit option "priority" must be a finite number (at most 1e9 either way), got ${describeValue(priority)}`);
  if (deadlineMs !== undefined && !(isNumber(deadlineMs) && deadlineMs >= 0)) throw new RoutingError('InvalidRequest', `admit option "deadlineMs" must be a finite number of ms >= 0, got ${describeValue(deadlineMs)}`);
  if (signal !== undefined && !(isRecordLike(signal) && typeof (signal as { aborted?: unknown }).aborted === 'boolean' && typeof (signal as { addEventListener?: unknown }).addEventListener === 'function')) {
    throw new RoutingError('InvalidRequest', `admit option "signal" must be an AbortSignal, got ${describeValue(signal)}`);
  }
  if (resumed !== undefined && typeof resumed !== 'boolean') throw new RoutingError('InvalidRequest', `admit option "resumed" must be a boolean, got ${describeValue(resumed)}`);
  return { priority: (priority as number | undefined) ?? 0, deadlineMs: deadlineMs as number | undefined, signal: signal as AbortSignal | undefined, resumed: resumed === true };
}
