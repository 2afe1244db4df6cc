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

function compactor(clock: ManualClock, applied: number) {
  const { kv, push } = fakeKv();
  const trims: number[] = [];
  const log = { bounds: async () => ({ first: 1, last: applied, messages: applied, bytes: 0 }), trim: async (below: number) => (trims.push(below), below - 1) } as unknown as LogStream;
  const c = new LogCompactor(
    { swarm: 'unit', replicaId: 'w', io: clock, log, nc: {} as NatsConnection, marginEntries: 1, graceMs: 60_000, directoryGraceMs: 20_000, applied: () => applied, member: () => true, reads: [1, 2], writes: [1, 2], floor: () => 1, signer: new LogSigner(SECRET, 'unit') },
    kv,
  );
  return { c, push, trims };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('LogCompactor', () => {
  it('with the secret, trims below its own or signed snapshots only; an unsigned announcement still holds the minimum', async () => {
    const clock = new ManualClock(T);
    const { c, push, trims } = compactor(clock, 20);
    await c.open();
    // A replica without the secret (the release before) stored the snapshot at 16 (it won the save), and applied 20.
    push({ replica: 'o', seq: 20, at: T, reads: [1], snapshot: 16 });
    // Another with the secret stored the one at 8, signed.
    push(new LogSigner(SECRET, 'unit').signed('progress', { replica: 'x', seq: 20, at: T, reads: [1, 2], snapshot: 8 }));
    await tick();
    expect(await c.stored(12)).toBe(12); // below its own 12 (margin 1), not the unsigned 16
    expect(trims).toEqual([12]);
    push({ replica: 'o', seq: 10, at: T, reads: [1], snapshot: 16 }); // an unsigned replica behind holds the trim back
    await tick();
    expect(await c.boundary()).toBe(10);
    await c.withdraw();
  });

  it('writes version 2 a window after a forged announcement said years ahead is cleared away, and names an unsigned announcer that holds the format down', async () => {
    const clock = new ManualClock(T);
    const { c, push, trims } = compactor(clock, 20);
    await c.open();
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
});
