/**
 * The pure argument checks (src/core/arguments.ts) and the telemetry bounds
 * (src/core/telemetry-limits.ts, the node machine's sample check): every case named in
 * docs/inputs.md, and properties that a random unknown key is refused and a valid input taken.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { badSampleField, isGoodValue, sampleProblem } from '../../machines/node.machine.js';
import { checkReleaseOutcome, checkRequest, checkRouteOptions, OUTCOME_KEYS, REQUEST_KEYS, ROUTE_OPTION_KEYS, unknownKey } from '../../src/core/arguments.js';
import { resolveRequest } from '../../src/core/cost.js';
import { describeValue } from '../../src/core/describe.js';
import { boundedLatency, TELEMETRY_LIMITS } from '../../src/core/telemetry-limits.js';
import { RoutingError, SwarmError, type ReleaseOutcome, type RouteOptions, type SwarmRequest, type TelemetrySample } from '../../src/index.js';

const SEED = 20261203;

function caught(f: () => unknown): Error {
  try {
    f();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

/** Throws `cls` with `code` and a message matching `message`. */
function expectRefused(f: () => unknown, cls: typeof RoutingError | typeof SwarmError, code: string, message: RegExp | string): void {
  const error = caught(f);
  expect(error).toBeInstanceOf(cls);
  expect((error as RoutingError | SwarmError).code).toBe(code);
  if (typeof message === 'string') expect(error.message).toContain(message);
  else expect(error.message).toMatch(message);
}

describe('checkRequest', () => {
  it.each<[string, unknown, RegExp]>([
    ['a misspelt model (the issue’s example)', { modle: 'x' }, /^request: unknown key "modle" \(known: tokens, weights, penalties, costModel, prompt, model, cache\)$/],
    ['a misspelt tokens', { token: 5 }, /unknown key "token"/],
    ['an unknown key beside good ones', { tokens: 5, model: 'base', temperature: 0.7 }, /unknown key "temperature"/],
    ['an unknown weight', { weights: { latncy: 2 } }, /^request field "weights": unknown key "latncy" \(known: latency, load, capability, hops, tokens\)$/],
    ['an unknown penalty', { penalties: { latency: 2 } }, /^request field "penalties": unknown key "latency" \(known: latencyMs, load, score\)$/],
    ['a model that is not a string', { model: 7 }, /request field "model" must be a model id string, got 7/],
    ['null', null, /the request must be an object, got null/],
    ['an array', [], /the request must be an object, got an array/],
    ['a number', 3, /the request must be an object, got 3/],
    ['an inherited unknown key', Object.create({ modle: 'x' }) as unknown, /unknown key "modle"/],
  ])('refuses %s with InvalidRequest naming the key', (_what, request, message) => {
    expectRefused(() => checkRequest(request), RoutingError, 'InvalidRequest', message);
    expectRefused(() => resolveRequest(request as never), RoutingError, 'InvalidRequest', message); // every router reads requests through it
  });

  it('takes every known key, and leaves values to resolveRequest', () => {
    const full: Required<SwarmRequest> = { tokens: 5, weights: { latency: 2, load: 1, capability: 1, hops: 1, tokens: 1 }, penalties: { latencyMs: 50, load: 1, score: 1 }, costModel: 'original', model: 'base', prompt: [1, 2], cache: false };
    expect(() => checkRequest(full)).not.toThrow();
    expect(() => checkRequest({})).not.toThrow();
    expect(() => checkRequest({ model: undefined, tokens: undefined })).not.toThrow();
    expect(() => checkRequest(Object.create(null) as unknown)).not.toThrow();
    expect(() => checkRequest({ weights: null })).not.toThrow(); // not an object: resolveRequest's to say
    expectRefused(() => resolveRequest({ weights: null } as never), RoutingError, 'InvalidRequest', /"weights" must be an object/);
  });

  it('does not invoke a getter (the router reads each field itself)', () => {
    let reads = 0;
    const request = Object.defineProperty({}, 'tokens', { enumerable: true, get: () => ++reads });
    checkRequest(request);
    expect(reads).toBe(0);
  });
});

describe('checkRouteOptions', () => {
  it.each<[string, unknown, RegExp]>([
    ['reserve: "yes" (the issue’s example)', { reserve: 'yes' }, /^route options: "reserve" must be a boolean, got "yes"$/],
    ['reserve: 1', { reserve: 1 }, /"reserve" must be a boolean, got 1/],
    ['a misspelt reserve (the issue’s example)', { reserv: true }, /^route options: unknown key "reserv" \(known: reserve\)$/],
    ['null', null, /route options must be an object \{ reserve\? \}, got null/],
    ['an array', [true], /got an array/],
    ['a string', 'reserve', /got "reserve"/],
  ])('refuses %s with InvalidRequest naming the key', (_what, options, message) => {
    expectRefused(() => checkRouteOptions(options), RoutingError, 'InvalidRequest', message);
  });

  it('takes {}, reserve true or false, reserve undefined', () => {
    const full: Required<RouteOptions> = { reserve: true };
    for (const options of [{}, full, { reserve: false }, { reserve: undefined }]) expect(() => checkRouteOptions(options)).not.toThrow();
  });
});

describe('checkReleaseOutcome', () => {
  it.each<[string, unknown, RegExp]>([
    ['ok: "no" (the issue’s example)', { ok: 'no' }, /^release of lease "L": "ok" must be a boolean, got "no"$/],
    ['ok: 0', { ok: 0 }, /"ok" must be a boolean, got 0/],
    ['a misspelt ok', { okk: false }, /^release of lease "L": outcome: unknown key "okk" \(known: latencyMs, ok, failedNode, cachedTokens, neutral, busyNode\)$/],
    ['a misspelt latency', { latency: 20 }, /unknown key "latency"/],
    ['a latency of 1e308', { latencyMs: 1e308 }, /"latencyMs" must be a number from 0 to 600000 \(ms\), got 1e\+308/],
    ['a latency just past the bound', { latencyMs: TELEMETRY_LIMITS.latencyMs + 0.001 }, /"latencyMs" must be a number from 0 to 600000/],
    ['a negative latency', { latencyMs: -1 }, /"latencyMs"/],
    ['a NaN latency', { latencyMs: Number.NaN }, /got NaN/],
    ['an infinite latency', { latencyMs: Infinity }, /got Infinity/],
    ['a latency as a string', { latencyMs: '20' }, /got "20"/],
    ['a failedNode that is not a string', { ok: false, failedNode: 3 }, /"failedNode" must be a node id string, got 3/],
    ['a failedNode with ok: true', { ok: true, failedNode: 'a' }, /"failedNode" names the node that failed: give it with ok: false, got ok: true/],
    ['a failedNode without ok', { failedNode: 'a' }, /give it with ok: false, got ok: undefined/],
    ['null', null, /the outcome must be an object \{ latencyMs\?, ok\?, failedNode\?, cachedTokens\?, neutral\?, busyNode\? \}, got null/],
    ['a busyNode that is not a string', { busyNode: 7 }, /"busyNode" must be a node id string, got 7/],
    ['a busyNode with ok: false', { busyNode: 'a', ok: false }, /"neutral" and "busyNode" take no "ok"/],
    ['neutral: "yes"', { neutral: 'yes' }, /"neutral" must be a boolean, got "yes"/],
    ['neutral with ok: false', { neutral: true, ok: false }, /"neutral" and "busyNode" take no "ok", "latencyMs" or "failedNode"/],
    ['neutral with a latency', { neutral: true, latencyMs: 5 }, /"neutral" and "busyNode" take no/],
    ['an array', [], /got an array/],
  ])('refuses %s with BadTelemetry naming the lease and the key', (_what, outcome, message) => {
    expectRefused(() => checkReleaseOutcome(outcome, 'L'), SwarmError, 'BadTelemetry', message);
  });

  it('takes every known key, and the bound itself', () => {
    // Every key but busyNode, which takes no ok (below).
    const full: Omit<Required<ReleaseOutcome>, 'busyNode'> = { latencyMs: TELEMETRY_LIMITS.latencyMs, ok: false, failedNode: 'a', cachedTokens: 12, neutral: false };
    expect(checkReleaseOutcome(full, 'L')).toEqual({ ...full, busyNode: undefined });
    expect(checkReleaseOutcome({ busyNode: 'b' }, 'L')).toEqual({ latencyMs: undefined, ok: undefined, failedNode: undefined, cachedTokens: undefined, neutral: true, busyNode: 'b' });
    expect(checkReleaseOutcome({}, 'L')).toEqual({ latencyMs: undefined, ok: undefined, failedNode: undefined, cachedTokens: undefined, neutral: false, busyNode: undefined });
    expect(checkReleaseOutcome({ latencyMs: 0, ok: true }, 'L')).toEqual({ latencyMs: 0, ok: true, failedNode: undefined, cachedTokens: undefined, neutral: false, busyNode: undefined });
    expect(checkReleaseOutcome({ neutral: true, cachedTokens: 3 }, 'L')).toEqual({ latencyMs: undefined, ok: undefined, failedNode: undefined, cachedTokens: 3, neutral: true, busyNode: undefined });
  });

  it('reads each field once: a getter cannot change a value after its check', () => {
    let reads = 0;
    const outcome = Object.defineProperty({}, 'latencyMs', { enumerable: true, get: () => (++reads === 1 ? 20 : Number.NaN) });
    expect(checkReleaseOutcome(outcome, 'L').latencyMs).toBe(20);
    expect(reads).toBe(1);
  });
});

describe('the key lists match the types', () => {
  it('lists every key of each type (a new key fails to compile here, or is refused)', () => {
    expect(REQUEST_KEYS).toEqual(Object.keys({ tokens: 0, weights: 0, penalties: 0, costModel: 0, prompt: 0, model: 0, cache: 0 } satisfies Record<keyof SwarmRequest, 0>));
    expect(ROUTE_OPTION_KEYS).toEqual(Object.keys({ reserve: 0 } satisfies Record<keyof RouteOptions, 0>));
    expect(OUTCOME_KEYS).toEqual(Object.keys({ latencyMs: 0, ok: 0, failedNode: 0, cachedTokens: 0, neutral: 0, busyNode: 0 } satisfies Record<keyof ReleaseOutcome, 0>));
  });
});

describe('properties', () => {
  /** A key none of the lists knows: any string, `__proto__` and `constructor` included. */
  const known = new Set([...REQUEST_KEYS, ...ROUTE_OPTION_KEYS, ...OUTCOME_KEYS, 'latency', 'load', 'capability', 'hops', 'score']); // and the weights' keys
  const strangeKey = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'toString', 'Reserve', 'latncy', 'modelId', '')).filter((k) => !known.has(k));
  /** An object with that key among valid ones (JSON.parse makes `__proto__` an own key, as a body would have it). */
  const withKey = <T extends object>(valid: T, key: string, value: unknown): T => {
    const body = JSON.stringify(valid).slice(1, -1);
    return JSON.parse(`{${body}${body === '' ? '' : ','}${JSON.stringify(key)}:${JSON.stringify(value)}}`) as T;
  };

  const validRequest = fc.record(
    {
      tokens: fc.nat({ max: 100_000 }),
      model: fc.string({ minLength: 1 }),
      costModel: fc.constantFrom('layer-aware', 'original'),
      weights: fc.record({ latency: fc.double({ min: 0, max: 10, noNaN: true }), hops: fc.nat(5) }, { requiredKeys: [] }),
      penalties: fc.record({ latencyMs: fc.nat(1000), score: fc.double({ min: 0, max: 10, noNaN: true }) }, { requiredKeys: [] }),
    },
    { requiredKeys: [] },
  );
  const validOptions = fc.record({ reserve: fc.boolean() }, { requiredKeys: [] });
  const validOutcome = fc.oneof(
    fc.record({ latencyMs: fc.double({ min: 0, max: TELEMETRY_LIMITS.latencyMs, noNaN: true }), ok: fc.constant(true) }, { requiredKeys: [] }),
    fc.record({ latencyMs: fc.double({ min: 0, max: TELEMETRY_LIMITS.latencyMs, noNaN: true }), ok: fc.constant(false), failedNode: fc.string() }, { requiredKeys: ['ok'] }),
  );

  it('valid requests, options and outcomes are taken', () => {
    fc.assert(
      fc.property(validRequest, validOptions, validOutcome, (request, options, outcome) => {
        checkRequest(request);
        resolveRequest(request);
        checkRouteOptions(options);
        checkReleaseOutcome(outcome, 'L');
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('a random unknown key is refused, naming it, whatever the valid keys beside it', () => {
    fc.assert(
      fc.property(validRequest, validOptions, validOutcome, strangeKey, fc.jsonValue(), (request, options, outcome, key, value) => {
        const named = `unknown key ${describeValue(key)} (known: `;
        expectRefused(() => checkRequest(withKey(request, key, value)), RoutingError, 'InvalidRequest', named);
        expectRefused(() => checkRouteOptions(withKey(options, key, value)), RoutingError, 'InvalidRequest', named);
        expectRefused(() => checkReleaseOutcome(withKey(outcome, key, value), 'L'), SwarmError, 'BadTelemetry', named);
        expectRefused(() => checkRequest({ weights: withKey({}, key, value) }), RoutingError, 'InvalidRequest', named);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('unknownKey finds exactly the keys outside the list', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.nat()), fc.uniqueArray(fc.string()), (value, list) => {
        const outside = Object.keys(value).filter((k) => !list.includes(k));
        const found = unknownKey(value, list);
        if (outside.length === 0) expect(found).toBeUndefined();
        else expect(outside).toContain(found);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});

describe('telemetry bounds (docs/inputs.md)', () => {
  it('are the documented ones', () => {
    expect(TELEMETRY_LIMITS).toEqual({ latencyMs: 600_000, load: 1_000, score: 1_000_000 });
    expect(Object.isFrozen(TELEMETRY_LIMITS)).toBe(true);
  });

  it.each(['latencyMs', 'load', 'score'] as const)('%s: the bound is taken, past it, NaN or infinite is refused', (field) => {
    const bound = TELEMETRY_LIMITS[field];
    expect(isGoodValue(field, bound)).toBe(true);
    for (const bad of [bound * (1 + 1e-9), 1e308, Infinity, Number.NaN, -1]) {
      expect(isGoodValue(field, bad)).toBe(false);
      const sample = { [field]: bad } as TelemetrySample;
      expect(badSampleField(sample)).toBe(field);
      expect(sampleProblem(sample)).toBe(`"${field}" must be a number from 0 to ${bound}${field === 'score' ? ' (and > 0)' : ''}, got ${String(bad)}`);
    }
    expect(isGoodValue(field, 0)).toBe(field !== 'score');
  });

  it('a random sample is good exactly when every value is within its bound', () => {
    const value = fc.oneof(fc.double({ min: -10, max: 2e6 }), fc.constantFrom(0, 600_000, 1_000, 1_000_000, 1e308));
    fc.assert(
      fc.property(fc.record({ load: value, latencyMs: value, score: value }, { requiredKeys: [] }), (sample) => {
        const fields = Object.keys(sample) as (keyof TelemetrySample)[];
        const good = fields.length > 0 && fields.every((f) => {
          const v = sample[f] as number;
          return v >= 0 && v <= TELEMETRY_LIMITS[f] && (f !== 'score' || v > 0);
        });
        expect(badSampleField(sample) === undefined).toBe(good);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('boundedLatency keeps a measured duration within [0, latencyMs]', () => {
    expect(boundedLatency(12.5)).toBe(12.5);
    expect(boundedLatency(700_000)).toBe(600_000);
    expect(boundedLatency(-3)).toBe(0);
    expect(boundedLatency(Number.NaN)).toBe(0);
    expect(boundedLatency(Infinity)).toBe(600_000);
  });
});
