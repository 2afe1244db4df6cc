/**
 * The trim point of a replica with the swarm secret during the upgrade window (docs/replication.md,
 * "Upgrades: format versions"), without NATS: unsigned announcements of replicas without the
 * secret count for the trim's minimum, but their snapshots do not count for its maximum (a replica
 * restarted with the secret could not start from one).
 */
import { describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import { ManualClock } from '../../src/index.js';
import { LogCompactor } from '../../src/replication/log-compactor.js';
import { LogSigner } from '../../src/replication/log-signer.js';
import type { LogStream } from '../../src/replication/log-stream.js';
import { fakeKv } from './fake-kv.js';

const T = 1_800_000_000_000;
const SECRET = 's'.repeat(64);

function compactor(clock: ManualClock, applied: number, secret = true) {
  const { kv, push, snapshot } = fakeKv();
  const trims: number[] = [];
  const log = { bounds: async () => ({ first: 1, last: applied, messages: applied, bytes: 0 }), trim: async (below: number) => (trims.push(below), below - 1) } as unknown as LogStream;
  const c = new LogCompactor(
    { swarm: 'unit', replicaId: 'w', io: clock, log, nc: {} as NatsConnection, marginEntries: 1, graceMs: 60_000, directoryGraceMs: 20_000, applied: () => applied, member: () => true, ...(secret ? { reads: [1, 2], writes: [1, 2], signer: new LogSigner(SECRET, 'unit') } : { reads: [1], writes: [1] }), floor: () => 1 },
    kv,
  );
  return { c, push, trims, snapshot };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('LogCompactor', () => {
  it('with the secret, trims below the signed snapshot the bucket holds only; an unsigned announcement still holds the minimum', async () => {
    const clock = new ManualClock(T);
    const { c, push, trims, snapshot } = compactor(clock, 20);
    const signer = new LogSigner(SECRET, 'unit');
    await c.open();
    snapshot(signer.signed('snapshot', { v: 1, seq: 12 }));
    // A replica without the secret (the release before) announced the snapshot at 16, and applied 20.
    push({ replica: 'o', seq: 20, at: T, reads: [1], snapshot: 16 });
    // Another with the secret stored the one at 8, signed.
    push(signer.signed('progress', { replica: 'x', seq: 20, at: T, reads: [1, 2], snapshot: 8 }));
    await tick();
    expect(await c.stored(12)).toBe(12); // below the bucket's signed 12 (margin 1), not the unsigned 16
    expect(trims).toEqual([12]);
    snapshot({ v: 1, seq: 16 }); // the unsigned one won the bucket: its own 12 is gone, a restart with the secret could not start from it
    expect(await c.stored(14)).toBe(0);
    snapshot(signer.signed('snapshot', { v: 1, seq: 16 }));
    push({ replica: 'o', seq: 10, at: T, reads: [1], snapshot: 16 }); // an unsigned replica behind holds the trim back
    await tick();
    expect(await c.boundary()).toBe(10);
    await c.withdraw();
  });

  it('without the secret, while a replica with it is around, trims no further than the signed snapshot the bucket holds (none: no trim)', async () => {
    const clock = new ManualClock(T);
    const { c, push, trims, snapshot } = compactor(clock, 20, false);
    await c.open();
    push(new LogSigner(SECRET, 'unit').signed('progress', { replica: 'x', seq: 20, at: T, reads: [1, 2], snapshot: 8 }));
    await tick();
    expect(c.secretAround()).toBe(false); // not read yet
    snapshot({ v: 1, seq: 12 }); // its own, unsigned, won the bucket
    expect(await c.stored(12)).toBe(0);
    expect(c.secretAround()).toBe(true);
    snapshot(new LogSigner(SECRET, 'unit').signed('snapshot', { v: 1, seq: 8 }));
    expect(await c.stored(16)).toBe(8);
    clock.advance(60_001); // x went silent: withdrawn at this boundary, so around for a window more
    snapshot({ v: 1, seq: 16 });
    expect(await c.stored(16)).toBe(0);
    clock.advance(60_000); // nobody with the secret heard for a window: its own snapshot counts again
    expect(c.secretAround()).toBe(false);
    expect(await c.stored(16)).toBe(16);
    expect(trims).toEqual([8, 16]);
    await c.withdraw();
  });

  it('writes version 2 a window after a forged announcement said years ahead is cleared away, and names an unsigned announcer that holds the format down', async () => {
    const clock = new ManualClock(T);
    const { c, push, trims, snapshot } = compactor(clock, 20);
    await c.open();
    snapshot(new LogSigner(SECRET, 'unit').signed('snapshot', { v: 1, seq: 12 }));
    push({ replica: 'ghost', seq: 0, at: T + 10 * 365 * 86_400_000, reads: [1] });
    await tick();
    clock.advance(60_000); // a whole window heard
    expect(c.format()).toBe(1); // on the board, it lacks version 2 as a live replica whose clock runs ahead would
    expect(await c.stored(12)).toBe(12); // the ghost does not hold the trim at 0, and is withdrawn at the boundary
    expect(trims).toEqual([12]);
    expect(c.format()).toBe(1);
    clock.advance(60_000); // a window after its withdrawal
    expect(c.format()).toBe(2);
    push({ replica: 'old', seq: 20, at: clock.now(), reads: [1] });
    await tick();
    expect(c.format()).toBe(1);
    expect(c.heldBy()).toEqual(['old']);
    await c.withdraw();
  });

  it('opens the announcements\' watch again at the next announcement when opening it failed (it would write the floor for good)', async () => {
    const clock = new ManualClock(T);
    const { c } = compactor(clock, 20);
    const kv = (c as unknown as { kv: { watch: () => Promise<unknown> } }).kv;
    const watch = kv.watch;
    let failures = 1;
    kv.watch = async () => {
      if (failures-- > 0) throw new Error('cut off');
      return watch();
    };
    await expect(c.open()).rejects.toThrow('cut off');
    await c.announce();
    await tick();
    clock.advance(60_000); // a whole window heard since
    expect(c.format()).toBe(2);
    await c.withdraw();
  });
});
