import { describe, expect, it } from 'vitest';
import { NonceCache } from '../../../src/wire/nonce-cache.js';
import { sameSecret, signatureHeaders, verifySignature, type SignedParts } from '../../../src/wire/request-signing.js';

const secret = Buffer.from('0123456789abcdef0123456789abcdef', 'utf8');
const NOW = 1_700_000_000_000;
const parts: SignedParts = { audience: 'agent/a1', method: 'POST', path: '/v1/stage', timestamp: NOW, nonce: 'a'.repeat(32), body: '{"x":1}' };
const A1 = { audience: 'agent/a1' };
const received = (over: Partial<SignedParts> = {}, headers = signatureHeaders(secret, parts)) => ({ method: over.method ?? parts.method, path: over.path ?? parts.path, body: over.body ?? parts.body, headers });

describe('verifySignature', () => {
  it('accepts a request signed with the secret, once', () => {
    const nonces = new NonceCache(60_000);
    expect(verifySignature(secret, received(), NOW + 1000, nonces, A1)).toMatchObject({ ok: true });
    expect(verifySignature(secret, received(), NOW + 1000, nonces, A1)).toEqual({ ok: false, reason: 'header x-hecate-nonce: already used (a replayed request)' });
  });

  it.each([
    ['another body', { body: '{"x":2}' }],
    ['another path', { path: '/v1/stage?x=1' }],
    ['another method', { method: 'PUT' }],
  ])('refuses %s than the one signed', (_what, over) => {
    const verdict = verifySignature(secret, received(over), NOW, new NonceCache(60_000), A1);
    expect(verdict).toEqual({ ok: false, reason: 'header x-hecate-signature: the signature does not match (another swarm secret, route or body?)' });
  });

  it('refuses another secret, a missing header and a timestamp beyond the skew', () => {
    const other = signatureHeaders(Buffer.from('another secret of thirty-two chars!!'), parts);
    expect(verifySignature(secret, received({}, other), NOW, new NonceCache(60_000), A1).ok).toBe(false);
    const { 'x-hecate-signature': _dropped, ...unsigned } = signatureHeaders(secret, parts);
    expect(verifySignature(secret, received({}, unsigned), NOW, new NonceCache(60_000), A1)).toMatchObject({ ok: false, reason: expect.stringContaining('not signed with the swarm secret') });
    expect(verifySignature(secret, received(), NOW + 30_001, new NonceCache(60_000), A1)).toEqual({ ok: false, reason: 'header x-hecate-timestamp: 30001 ms behind this host\'s clock (at most 30000 ms)' });
    expect(verifySignature(secret, received(), NOW + 30_000, new NonceCache(60_000), A1).ok).toBe(true);
    expect(verifySignature(secret, received(), NOW - 30_000, new NonceCache(60_000), A1).ok).toBe(true);
  });

  it('refuses a request signed for another receiver, even with its audience header rewritten', () => {
    const verdict = verifySignature(secret, received(), NOW, new NonceCache(60_000), { audience: 'agent/a2' });
    expect(verdict).toEqual({ ok: false, reason: 'header x-hecate-audience: signed for "agent/a1", not for this receiver ("agent/a2"): a request meant for another' });
    const rewritten = { ...signatureHeaders(secret, parts), 'x-hecate-audience': 'agent/a2' };
    expect(verifySignature(secret, received({}, rewritten), NOW, new NonceCache(60_000), { audience: 'agent/a2' })).toMatchObject({ ok: false, reason: expect.stringContaining('the signature does not match') });
  });

  it('refuses a stamp further ahead than maxAheadMs, or before notBefore (a receiver restarted since)', () => {
    const window = { ...A1, maxAheadMs: 500, notBefore: NOW + 200 };
    expect(verifySignature(secret, received(), NOW - 501, new NonceCache(60_000), { ...A1, maxAheadMs: 500 })).toEqual({ ok: false, reason: 'header x-hecate-timestamp: 501 ms ahead of this host\'s clock (at most 500 ms)' });
    expect(verifySignature(secret, received(), NOW + 1000, new NonceCache(60_000), window)).toEqual({ ok: false, reason: 'header x-hecate-timestamp: signed 200 ms before this receiver takes requests (it started since: a request captured before a restart)' });
    expect(verifySignature(secret, received(), NOW + 1000, new NonceCache(60_000), { ...window, notBefore: NOW }).ok).toBe(true);
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
