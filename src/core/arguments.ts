/**
 * The checks of the library's call arguments, as pure functions (docs/inputs.md, "Typed errors
 * for bad arguments"): a request and `route`'s options (`RoutingError` `InvalidRequest`), a
 * release's outcome (`SwarmError` `BadTelemetry`). An unknown key is refused, as the CLI refuses
 * an unknown flag: a misspelt key would otherwise quietly become its default (`reserv: true`
 * routes without a lease, `okk: false` counts a failure as a success). So is a wrong type.
 *
 * They sit on `route`'s and `release`'s hot path: a plain-data argument costs one `for…in` over
 * its few keys and allocates nothing; messages are built only when a check fails.
 */
import { describeValue, isRecordLike } from './describe.js';
import { RoutingError, SwarmError } from './errors.js';
import { checkPrompt, PROMPT_LIMIT } from './prompt.js';
import { TELEMETRY_LIMITS } from './telemetry-limits.js';
import type { CostPenalties, CostWeights, RoutingRequest } from './types.js';

/** The keys of a request: a routing request's, and the swarm's `model`. */
export const REQUEST_KEYS: readonly string[] = Object.freeze(Object.keys({ tokens: 0, weights: 0, penalties: 0, costModel: 0, prompt: 0, model: 0, cache: 0 } satisfies Record<keyof RoutingRequest | 'model' | 'cache', 0>));
const WEIGHT_KEYS: readonly string[] = Object.freeze(Object.keys({ latency: 0, load: 0, capability: 0, hops: 0, tokens: 0 } satisfies Record<keyof CostWeights, 0>));
const PENALTY_KEYS: readonly string[] = Object.freeze(Object.keys({ latencyMs: 0, load: 0, score: 0 } satisfies Record<keyof CostPenalties, 0>));
/** The keys of `swarm.route`'s options (`RouteOptions`). */
export const ROUTE_OPTION_KEYS: readonly string[] = Object.freeze(['reserve']);
/** The keys of a release's outcome (`ReleaseOutcome`). */
export const OUTCOME_KEYS: readonly string[] = Object.freeze(['latencyMs', 'ok', 'failedNode', 'cachedTokens', 'neutral', 'busyNode']);

/** The first enumerable key of `value` (own or inherited) that is not one of `known`; undefined when there is none. */
export function unknownKey(value: object, known: readonly string[]): string | undefined {
  for (const key in value) if (!known.includes(key)) return key;
  return undefined;
}

/** The message for an unknown key: `what: unknown key "k" (known: a, b)`. */
export function unknownKeyMessage(what: string, key: string, known: readonly string[]): string {
  return `${what}: unknown key ${describeValue(key)} (known: ${known.join(', ')})`;
}

/**
 * Checks a request's shape: an object (not an array) whose keys are those of {@link REQUEST_KEYS},
 * `weights` and `penalties` without unknown keys, `model` a string when given. Its numbers and
 * `costModel` are checked where they are read (`resolveRequest`).
 * @throws {RoutingError} `InvalidRequest` naming the key.
 */
export function checkRequest(request: unknown): void {
  if (!isRecordLike(request)) throw new RoutingError('InvalidRequest', `the request must be an object, got ${describeValue(request)}`);
  for (const key in request) {
    if (key === 'tokens' || key === 'costModel') continue;
    if (key === 'model') {
      const model = request[key];
      if (model !== undefined && typeof model !== 'string') throw new RoutingError('InvalidRequest', `request field "model" must be a model id string, got ${describeValue(model)}`);
      continue;
    }
    if (key === 'prompt') {
      if (request[key] !== undefined) checkPrompt(request[key]);
      continue;
    }
    if (key === 'cache') {
      if (request[key] !== undefined && typeof request[key] !== 'boolean') throw new RoutingError('InvalidRequest', `request field "cache" must be a boolean, got ${describeValue(request[key])}`);
      continue;
    }
    if (key === 'weights' || key === 'penalties') {
      const known = key === 'weights' ? WEIGHT_KEYS : PENALTY_KEYS;
      const inner = request[key];
      const bad = isRecordLike(inner) ? unknownKey(inner, known) : undefined; // not an object: resolveRequest says so
      if (bad !== undefined) throw new RoutingError('InvalidRequest', unknownKeyMessage(`request field "${key}"`, bad, known));
      continue;
    }
    throw new RoutingError('InvalidRequest', unknownKeyMessage('request', key, REQUEST_KEYS));
  }
}

/**
 * Checks `swarm.route`'s options: an object whose only key is `reserve`, a boolean when given.
 * @throws {RoutingError} `InvalidRequest` naming the key.
 */
export function checkRouteOptions(options: unknown): void {
  if (!isRecordLike(options)) throw new RoutingError('InvalidRequest', `route options must be an object { reserve? }, got ${describeValue(options)}`);
  for (const key in options) {
    if (key !== 'reserve') throw new RoutingError('InvalidRequest', unknownKeyMessage('route options', key, ROUTE_OPTION_KEYS));
    const reserve = options[key];
    if (reserve !== undefined && typeof reserve !== 'boolean') throw new RoutingError('InvalidRequest', `route options: "reserve" must be a boolean, got ${describeValue(reserve)}`);
  }
}

/** A release's outcome as checked: each field read once. */
export interface CheckedOutcome {
  readonly latencyMs: number | undefined;
  readonly ok: boolean | undefined;
  readonly failedNode: string | undefined;
  readonly cachedTokens: number | undefined;
  readonly neutral: boolean;
  readonly busyNode: string | undefined;
}

const NO_OUTCOME: CheckedOutcome = Object.freeze({ latencyMs: undefined, ok: undefined, failedNode: undefined, cachedTokens: undefined, neutral: false, busyNode: undefined });

function badOutcome(leaseId: unknown, problem: string): SwarmError {
  return new SwarmError('BadTelemetry', `release of lease ${describeValue(leaseId)}: ${problem}`);
}

/**
 * Checks a release's outcome and reads each of its fields once (a getter cannot change a value
 * after its check): an object of {@link OUTCOME_KEYS}; `latencyMs` a number from 0 to
 * `TELEMETRY_LIMITS.latencyMs`; `ok` a boolean; `failedNode` a string, given only with
 * `ok: false` (it names the node that failed); `cachedTokens` an integer from 0 to `PROMPT_LIMIT`; `neutral` a boolean, true
 * only without `ok`, `latencyMs` and `failedNode`; `busyNode` a string, without them too (it makes the outcome
 * neutral). Whether `failedNode` or `busyNode` is one of the lease's nodes
 * is the swarm's to check.
 * @throws {SwarmError} `BadTelemetry` naming the lease and the key.
 */
export function checkReleaseOutcome(outcome: unknown, leaseId: unknown): CheckedOutcome {
  if (!isRecordLike(outcome)) throw badOutcome(leaseId, `the outcome must be an object { ${OUTCOME_KEYS.join('?, ')}? }, got ${describeValue(outcome)}`);
  let keys = 0;
  for (const key in outcome) {
    if (!OUTCOME_KEYS.includes(key)) throw badOutcome(leaseId, unknownKeyMessage('outcome', key, OUTCOME_KEYS));
    keys++;
  }
  if (keys === 0) return NO_OUTCOME;
  const { latencyMs, ok, failedNode, cachedTokens, neutral, busyNode } = outcome; // read once
  if (latencyMs !== undefined && !(typeof latencyMs === 'number' && latencyMs >= 0 && latencyMs <= TELEMETRY_LIMITS.latencyMs)) {
    throw badOutcome(leaseId, `"latencyMs" must be a number from 0 to ${TELEMETRY_LIMITS.latencyMs} (ms), got ${describeValue(latencyMs)}`);
  }
  for (const [key, flag] of [['ok', ok], ['neutral', neutral]]) if (flag !== undefined && typeof flag !== 'boolean') throw badOutcome(leaseId, `"${key}" must be a boolean, got ${describeValue(flag)}`);
  for (const [key, node] of [['failedNode', failedNode], ['busyNode', busyNode]]) {
    if (node !== undefined && typeof node !== 'string') throw badOutcome(leaseId, `"${key}" must be a node id string, got ${describeValue(node)}`);
  }
  if (failedNode !== undefined && ok !== false) throw badOutcome(leaseId, `"failedNode" names the node that failed: give it with ok: false, got ok: ${describeValue(ok)}`);
  if (cachedTokens !== undefined && !(typeof cachedTokens === 'number' && Number.isInteger(cachedTokens) && cachedTokens >= 0 && cachedTokens <= PROMPT_LIMIT)) {
    throw badOutcome(leaseId, `"cachedTokens" must be an integer from 0 to ${PROMPT_LIMIT}, got ${describeValue(cachedTokens)}`);
  }
  if ((neutral === true || busyNode !== undefined) && (ok !== undefined || latencyMs !== undefined || failedNode !== undefined)) {
    throw badOutcome(leaseId, `"neutral" and "busyNode" take no "ok", "latencyMs" or "failedNode"`);
  }
  return { latencyMs, ok: ok as boolean | undefined, failedNode: failedNode as string | undefined, cachedTokens, neutral: neutral === true || busyNode !== undefined, busyNode: busyNode as string | undefined };
}
