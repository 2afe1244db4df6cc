import { describe, expect, it } from 'vitest';
import { NonceCache } from '../../../src/wire/nonce-cache.js';
import { sameSecret, signatureHeaders, verifySignature, type SignedParts } from '../../../src/wire/request-signing.js';

const secret = Buffer.from('0123456789abcdef0123456789abcdef', 'utf8');
const NOW = 1_700_000_000_000;
const parts: SignedParts = { method: 'POST', path: '/v1/stage', timestamp: NOW, nonce: 'a'.repeat(32), body: '{"x":1}' };
const received = (over: Partial<SignedParts> = {}, headers = signatureHeaders(secret, parts)) => ({ method: over.method ?? parts.method, path: over.path ?? parts.path, body: over.body ?? parts.body, headers });

describe('verifySignature', () => {
  it('accepts a request signed with the secret, once', () => {
    const nonces = new NonceCache(60_000);
    expect(verifySignature(secret, received(), NOW + 1000, nonces)).toMatchObject({ ok: true });
    expect(verifySignature(secret, received(), NOW + 1000, nonces)).toEqual({ ok: false, reason: 'header x-hecate-nonce: already used (a replayed request)' });
  });

  it.each([
    ['another body', { body: '{"x":2}' }],
    ['another path', { path: '/v1/stage?x=1' }],
    ['another method', { method: 'PUT' }],
  ])('refuses %s than the one signed', (_what, over) => {
    const verdict = verifySignature(secret, received(over), NOW, new NonceCache(60_000));
    expect(verdict).toEqual({ ok: false, reason: 'header x-hecate-signature: the signature does not match (another swarm secret?)' });
  });

  it('refuses another secret, a missing header and a timestamp beyond the skew', () => {
    const other = signatureHeaders(Buffer.from('another secret of thirty-two chars!!'), parts);
    expect(verifySignature(secret, received({}, other), NOW, new NonceCache(60_000)).ok).toBe(false);
    const { 'x-hecate-signature': _dropped, ...unsigned } = signatureHeaders(secret, parts);
    expect(verifySignature(secret, received({}, unsigned), NOW, new NonceCache(60_000))).toMatchObject({ ok: false, reason: expect.stringContaining('not signed with the swarm secret') });
    expect(verifySignature(secret, received(), NOW + 30_001, new NonceCache(60_000))).toEqual({ ok: false, reason: 'header x-hecate-timestamp: 30001 ms away from this host\'s clock (at most 30000 ms)' });
    expect(verifySignature(secret, received(), NOW - 30_000, new NonceCache(60_000)).ok).toBe(true);
  });
});

describe('NonceCache', () => {
  it('forgets a nonce once its window has passed, and refuses new ones when full', () => {
    const cache = new NonceCache(1000, 2);
    expect(cache.admit('n1', 0)).toBe('fresh');
    expect(cache.admit('n2', 500)).toBe('fresh');
    expect(cache.admit('n3', 600)).toBe('full');
    expect(cache.admit('n1', 999)).toBe('replayed');
    expect(cache.admit('n3', 1000)).toBe('fresh'); // n1 expired at 1000
    expect(cache.size).toBe(2);
  });
});

describe('sameSecret', () => {
  it('is true only for the same text, whatever the lengths', () => {
    expect(sameSecret('abc', 'abc')).toBe(true);
    expect(sameSecret('abc', 'abd')).toBe(false);
    expect(sameSecret('abc', 'abcd')).toBe(false);
    expect(sameSecret('', 'a')).toBe(false);
  });
});
