/**
 * Which entries and heartbeats a replica with the swarm secret takes (docs/replication.md,
 * "Signed entries"), without NATS: the stream's stored time decides an entry's age, an id applied
 * in the window is a replay, unsigned entries are legacy only until the log's first signed one;
 * a heartbeat must be signed, recent and later than the node's last.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { HeartbeatCodec } from '../../src/replication/heartbeat-codec.js';
import { LogAcceptance, REPLAY_WINDOW_MS } from '../../src/replication/log-acceptance.js';
import { canonicalJson, LogSigner } from '../../src/replication/log-signer.js';

const signer = new LogSigner('s'.repeat(32), 'unit');
const T = 1_800_000_000_000;
const entry = (id: string, at: number) => signer.signed('entry', { v: 2, type: 'swarm.event', id, event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' }, at });

describe('LogAcceptance', () => {
  it('takes a signed entry stored within 30 s of its signing, once; refuses a late copy, a replay and another swarm\'s entry', () => {
    const a = new LogAcceptance(signer);
    expect(a.accept(entry('r.c.1', T), 2, T + 29_000)).toEqual({ ok: true });
    expect(a.accept(entry('r.c.2', T), 3, T + 31_000)).toMatchObject({ ok: false, verified: true, why: expect.stringMatching(/more than 30000 ms apart/) });
    expect(a.accept(entry('r.c.1', T), 4, T + 29_500)).toMatchObject({ ok: false, verified: true, why: expect.stringMatching(/repeats entry "r.c.1"/) });
    const other = new LogSigner('s'.repeat(32), 'another-swarm').signed('entry', { v: 2, type: 'swarm.event', id: 'r.c.3', event: { type: 'node.alive', nodeId: 'gpu' }, at: T });
    expect(a.accept(other, 5, T)).toMatchObject({ ok: false, verified: false });
    // A signed entry with one field changed no longer verifies.
    expect(a.accept({ ...entry('r.c.4', T), id: 'r.c.5' }, 6, T)).toMatchObject({ ok: false, verified: false });
  });

  it('forgets ids past the replay window (their copies are refused for their age) and keeps the window in its saved state', () => {
    const a = new LogAcceptance(signer);
    a.accept(entry('r.c.1', T), 2, T);
    a.accept(entry('r.c.2', T + REPLAY_WINDOW_MS + 1), 3, T + REPLAY_WINDOW_MS + 1);
    expect(a.save()).toEqual({ sealed: true, recent: [['r.c.2', T + REPLAY_WINDOW_MS + 1]], top: 2 }); // top: the highest signed version applied (the floor)
    const b = new LogAcceptance(signer);
    b.restore(a.save());
    expect(b.accept(entry('r.c.2', T + REPLAY_WINDOW_MS + 1), 4, T + REPLAY_WINDOW_MS + 2)).toMatchObject({ ok: false, why: expect.stringMatching(/replay/) });
  });

  it('takes unsigned (version 1) entries of a log written before the secret, until its first signed entry', () => {
    const a = new LogAcceptance(signer);
    const legacy = { v: 1, type: 'swarm.event', id: 'old.1', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } };
    expect(a.accept(legacy, 2, T)).toEqual({ ok: true });
    expect(a.accept(entry('r.c.1', T), 3, T)).toEqual({ ok: true });
    expect(a.accept({ ...legacy, id: 'old.2' }, 4, T)).toMatchObject({ ok: false, why: expect.stringMatching(/not signed \(format version 1\)/) });
  });
});

describe('canonicalJson', () => {
  it('is the same for the same value whatever its key order', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined, e: null }], '10': 'x', '2': 'y' })).toBe('{"10":"x","2":"y","a":[{"d":2,"e":null}],"b":1}');
    expect(signer.sign('entry', { a: 1, b: 2 })).toBe(signer.sign('entry', { b: 2, a: 1 }));
    expect(signer.sign('entry', { a: 1 })).not.toBe(signer.sign('heartbeat', { a: 1 }));
  });
});

describe('HeartbeatCodec', () => {
  it('takes a signed heartbeat once, later than the node\'s last and within 30 s of its wall clock', () => {
    const clock = new ManualClock(T);
    const sender = new HeartbeatCodec(signer, clock);
    const receiver = new HeartbeatCodec(signer, clock);
    const beat = sender.encode('gpu');
    expect(receiver.decode(beat)).toBe('gpu');
    expect(receiver.decode(beat)).toBeUndefined(); // the same heartbeat again: a copy
    clock.advance(1000);
    const next = sender.encode('gpu');
    expect(receiver.decode(next)).toBe('gpu');
    clock.advance(31_000);
    expect(receiver.decode(sender.encode('gpu').replace(/"at":\d+/, `"at":${T}`))).toBeUndefined(); // tampered
    const stale = JSON.stringify(signer.signed('heartbeat', { id: 'desktop', at: clock.now() - 31_000 }));
    expect(receiver.decode(stale)).toBeUndefined();
    expect(receiver.decode('gpu')).toBeUndefined(); // unsigned
    expect(receiver.rejected).toBe(4);
    expect(new HeartbeatCodec(undefined).decode('gpu')).toBe('gpu'); // no secret: the id as text
  });

  it('goes and is taken as the id as text while the log\'s floor is 1 (the upgrade window), signed only once it is 2', () => {
    const clock = new ManualClock(T);
    let floor = 1;
    const codec = new HeartbeatCodec(signer, clock, () => floor);
    expect(codec.encode('gpu')).toBe('gpu'); // a replica of the release before reads it
    expect(codec.decode('gpu')).toBe('gpu'); // and is heard
    expect(codec.decode(new HeartbeatCodec(signer, clock).encode('desktop'))).toBe('desktop'); // a signed one too
    expect(codec.decode(JSON.stringify({ id: 'gpu', at: T, sig: '0'.repeat(64) }))).toBeUndefined(); // a bad signature is not unsigned
    floor = 2;
    expect(codec.decode('gpu')).toBeUndefined();
    expect(JSON.parse(codec.encode('gpu'))).toMatchObject({ id: 'gpu', sig: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(codec.rejected).toBe(2);
  });
});
