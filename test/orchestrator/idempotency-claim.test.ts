/**
 * Claiming an idempotency key in the checkpoint store (in memory, on a ManualClock): one holder
 * at a time, a dead holder's key taken over after its lease with its checkpoint, a finished key's
 * answer kept until the TTL, a reused key refused, a paused key free at once.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import type { Clock } from '../../src/runtime/types.js';
import { decodeInputs, encodeInputs, parseCheckpoint } from '../../src/orchestrator/generate-checkpoint.js';
import type { GenerateReply } from '../../src/orchestrator/generate-protocol.js';
import { claimGenerate, type ClaimOutcome } from '../../src/orchestrator/idempotency-claim.js';
import { IdempotencyError } from '../../src/orchestrator/idempotency-error.js';
import { idempotencyKeyOf } from '../../src/orchestrator/idempotency-key.js';
import { MemoryCheckpoints } from '../../src/orchestrator/memory-checkpoints.js';
import { scopedKey } from '../../src/orchestrator/idempotency-scope.js';

const LEASE = 3000;
const TTL = 60_000;
/** A holder that died: it tells the time but its timers never fire (no renewal). */
const frozen = (clock: ManualClock): Clock => ({ now: () => clock.now(), setTimeout: () => 0, clearTimeout: () => {} });
const reply = (digest: string): GenerateReply => ({ model: 'base', steps: 6, digest, sessionId: 's', resumes: 0, path: [], ms: 1 });

async function refused(promise: Promise<unknown>): Promise<IdempotencyError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof IdempotencyError) return error;
    throw error;
  }
  throw new Error('expected an IdempotencyError');
}

function run(outcome: ClaimOutcome) {
  if (outcome.kind !== 'run') throw new Error(`expected to run, got ${outcome.kind}`);
  return outcome;
}

describe('claimGenerate', () => {
  it('lets one holder run; a second attempt meanwhile is InProgress with the lease left as its retry-after', async () => {
    const clock = new ManualClock(1000);
    const store = new MemoryCheckpoints(clock, TTL);
    const a = run(await claimGenerate(store, 'k1', { fingerprint: 'req', firstInput: 7 }, { owner: 'A', clock, leaseMs: LEASE }));
    expect(a.inputs).toEqual([7]);
    clock.advance(500);
    const busy = await refused(claimGenerate(store, 'k1', { fingerprint: 'req', firstInput: 7 }, { owner: 'B', clock, leaseMs: LEASE }));
    expect(busy.code).toBe('InProgress');
    expect(busy.retryAfterMs).toBe(2500);
    expect(busy.message).toMatch(/running on orchestrator "A"/);
    // The live holder renews every third of the lease: long after the first lease, still its.
    for (let i = 0; i < 30; i++) {
      clock.advance(LEASE / 3);
      await new Promise((r) => setImmediate(r)); // the renewal's write lands
    }
    expect(parseCheckpoint((await store.get('k1'))?.value ?? '', 'k1').leaseUntil).toBeGreaterThan(clock.now());
    expect((await refused(claimGenerate(store, 'k1', { fingerprint: 'req', firstInput: 7 }, { owner: 'B', clock, leaseMs: LEASE }))).code).toBe('InProgress');
    await a.claim.pause(0, [7]);
  });

  it('takes over a dead holder\'s key after its lease, from its last checkpoint; the dead holder\'s next write finds it lost', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryCheckpoints(clock, TTL);
    const a = run(await claimGenerate(store, 'k2', { fingerprint: 'req', firstInput: 1 }, { owner: 'A', clock: frozen(clock), leaseMs: LEASE }));
    await a.claim.checkpoint(4, [1, 2, 3, 4, 5, 6, 7]); // 4 steps done: inputs 0..4
    clock.advance(LEASE - 1);
    expect((await refused(claimGenerate(store, 'k2', { fingerprint: 'req', firstInput: 1 }, { owner: 'B', clock, leaseMs: LEASE }))).code).toBe('InProgress');
    clock.advance(1 + LEASE); // the checkpoint renewed the lease; now it ran out
    const b = run(await claimGenerate(store, 'k2', { fingerprint: 'req', firstInput: 1 }, { owner: 'B', clock, leaseMs: LEASE }));
    expect(b.inputs).toEqual([1, 2, 3, 4, 5]);
    expect(a.claim.signal.aborted).toBe(false);
    await a.claim.checkpoint(8, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(a.claim.signal.aborted).toBe(true);
    expect((a.claim.signal.reason as IdempotencyError).code).toBe('ClaimLost');
    const stored = parseCheckpoint((await store.get('k2'))?.value ?? '', 'k2');
    expect([stored.owner.startsWith('B'), stored.done]).toEqual([true, 4]); // A's late write changed nothing
    await b.claim.finish(reply('0000abcd'), 6);
  });

  it('keeps a finished key\'s answer until the TTL after its last write, then the key is new', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryCheckpoints(clock, TTL);
    const a = run(await claimGenerate(store, 'k3', { fingerprint: 'req', firstInput: 1 }, { owner: 'A', clock, leaseMs: LEASE }));
    await a.claim.finish(reply('deadbeef'), 6);
    clock.advance(TTL - 1);
    expect(await claimGenerate(store, 'k3', { fingerprint: 'req', firstInput: 1 }, { owner: 'B', clock, leaseMs: LEASE })).toEqual({ kind: 'done', reply: reply('deadbeef') });
    clock.advance(1);
    expect(store.size).toBe(0);
    const fresh = run(await claimGenerate(store, 'k3', { fingerprint: 'req', firstInput: 1 }, { owner: 'B', clock, leaseMs: LEASE }));
    expect(fresh.inputs).toEqual([1]);
    await fresh.claim.pause(0, [1]);
  });

  it('refuses a key reused for another request, and frees a paused key at once with its progress', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryCheckpoints(clock, TTL);
    const a = run(await claimGenerate(store, 'k4', { fingerprint: 'req', firstInput: 1 }, { owner: 'A', clock, leaseMs: LEASE }));
    expect((await refused(claimGenerate(store, 'k4', { fingerprint: 'other', firstInput: 1 }, { owner: 'B', clock, leaseMs: LEASE }))).code).toBe('KeyReused');
    await a.claim.checkpoint(2, [1, 2, 3]);
    await a.claim.pause(3, [1, 2, 3, 4]); // a cancel after step 3: its progress is kept
    const b = run(await claimGenerate(store, 'k4', { fingerprint: 'req', firstInput: 1 }, { owner: 'B', clock, leaseMs: LEASE }));
    expect(b.inputs).toEqual([1, 2, 3, 4]);
    await b.claim.pause(3, [1, 2, 3, 4]);
  });

  it('says the store is unavailable when it throws', async () => {
    const clock = new ManualClock(0);
    const broken = { ttlMs: TTL, create: () => Promise.reject(new Error('no responders')), get: () => Promise.reject(new Error('x')), update: () => Promise.reject(new Error('x')), remove: () => Promise.reject(new Error('x')), close: async () => {} };
    const error = await refused(claimGenerate(broken, 'k5', { fingerprint: 'req', firstInput: 1 }, { owner: 'A', clock, leaseMs: LEASE }));
    expect([error.code, error.message]).toEqual(['Unavailable', 'the checkpoint store did not answer (create): no responders']);
  });
});

describe('the checkpoint record', () => {
  it('holds step inputs as 8 hex digits each, and refuses a record of another version naming it', () => {
    const inputs = [0, 1, 0xffffffff, 0x12345678];
    expect(encodeInputs(inputs)).toBe('0000000000000001ffffffff12345678');
    expect(decodeInputs(encodeInputs(inputs))).toEqual(inputs);
    expect(() => parseCheckpoint('{"v":2}', 'k')).toThrow('checkpoint of key "k" has format version 2; this orchestrator reads 1');
    expect(() => parseCheckpoint(JSON.stringify({ v: 1, request: 'r', state: 'running', owner: 'A', leaseUntil: 0, done: 2, inputs: '00000001' }), 'k')).toThrow('field "inputs"');
  });
});

describe('idempotencyKeyOf', () => {
  it('takes the header or the body field, refusing a bad key or two that differ', () => {
    expect(idempotencyKeyOf(undefined, undefined)).toBeUndefined();
    expect(idempotencyKeyOf('a-1', undefined)).toBe('a-1');
    expect(idempotencyKeyOf(undefined, 'req:7.x_y')).toBe('req:7.x_y');
    expect(idempotencyKeyOf('same', 'same')).toBe('same');
    for (const [header, field, message] of [
      ['a', 'b', /differ/],
      ['', undefined, /Idempotency-Key header: must be 1-128/],
      [undefined, 'x'.repeat(129), /idempotencyKey: must be 1-128 .*129 characters/],
      [undefined, 'a b', /idempotencyKey: must be/],
      [['a', 'b'], undefined, /given 2 times/],
    ] as const) {
      let error: unknown;
      try {
        idempotencyKeyOf(header, field);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(IdempotencyError);
      expect((error as IdempotencyError).code).toBe('InvalidKey');
      expect((error as Error).message).toMatch(message);
    }
  });
});

describe('idempotency within bounds', () => {
  const request = { fingerprint: 'req', firstInput: 1 };

  it('refuses a new key past the store\'s bound of records or characters (Full, retry when the oldest expires), and takes it once that expired', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryCheckpoints(clock, TTL, { records: 2, chars: 1_000_000 });
    const options = { owner: 'A', clock: frozen(clock), leaseMs: LEASE };
    await claimGenerate(store, 'k1', request, options);
    clock.advance(1000);
    await claimGenerate(store, 'k2', request, options);
    const full = await refused(claimGenerate(store, 'k3', request, options));
    expect([full.code, full.retryAfterMs]).toEqual(['Full', TTL - 1000]);
    expect(full.message).toMatch(/holds 2 keys .* at most 2/);
    clock.advance(TTL - 1000);
    expect(run(await claimGenerate(store, 'k3', request, options)).fresh).toBe(true);
    const small = new MemoryCheckpoints(clock, TTL, { records: 100, chars: 300 });
    await claimGenerate(small, 'a', request, options);
    expect((await refused(claimGenerate(small, 'b', { fingerprint: 'x'.repeat(200), firstInput: 1 }, options))).code).toBe('Full');
  });

  it('leaves no record when a fresh claim is released (a request refused before its first step)', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryCheckpoints(clock, TTL);
    const claimed = run(await claimGenerate(store, 'k', request, { owner: 'A', clock: frozen(clock), leaseMs: LEASE }));
    expect(store.size).toBe(1);
    await claimed.claim.release();
    expect(store.size).toBe(0);
    // Another request under the key is not KeyReused: nothing was kept.
    expect(run(await claimGenerate(store, 'k', { fingerprint: 'other', firstInput: 2 }, { owner: 'A', clock: frozen(clock), leaseMs: LEASE })).fresh).toBe(true);
  });

  it('scopes a key by its caller: a hash of its bearer token, else its source address; and by its class', () => {
    const byToken = scopedKey('k', { authorization: 'Bearer secret-1', address: '10.0.0.1' });
    expect(byToken).toMatch(/^t-[0-9a-f]{32}\/\/k$/);
    expect(byToken).not.toContain('secret-1');
    expect(scopedKey('k', { authorization: 'Bearer secret-1', address: '10.0.0.2' })).toBe(byToken);
    expect(scopedKey('k', { authorization: 'Bearer secret-2', address: '10.0.0.1' })).not.toBe(byToken);
    expect(scopedKey('k', { authorization: undefined, address: '::ffff:10.0.0.1' })).toBe('a-10.0.0.1//k');
    expect(scopedKey('k', { authorization: undefined, address: '10.0.0.1', className: 'batch' })).toBe('a-10.0.0.1/batch/k');
  });
});
