/**
 * The progress board without NATS (docs/replication.md, "Compaction" and "Upgrades: format
 * versions"): a fake KV bucket delivers the announcements as the watch would; the board says which
 * are live, and remembers for a window an announcement that was live or withdrawn.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { ProgressBoard } from '../../src/replication/replica-progress.js';
import { fakeKv } from './fake-kv.js';

const T = 1_800_000_000_000;
const GRACE = 2000;

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('ProgressBoard', () => {
  it('remembers for a window an announcement lacking a version that was live, withdrawn (by a stale view) or replaced', async () => {
    const clock = new ManualClock(T);
    const { kv, push, remove } = fakeKv();
    const board = new ProgressBoard(kv, undefined, () => 1, () => clock.now());
    await board.open();
    push({ replica: 'old', seq: 3, at: T, reads: [1] });
    await tick();
    expect(board.read(clock.now(), GRACE).live.map((p) => p.replica)).toEqual(['old']);
    clock.advance(500);
    remove('old'); // say another replica's stale view called it silent
    await tick();
    expect(board.read(clock.now(), GRACE).live).toEqual([]);
    expect(board.recent(GRACE)).toEqual([{ reads: [1], agoMs: 0 }]);
    clock.advance(GRACE - 1);
    expect(board.recent(GRACE)).toEqual([{ reads: [1], agoMs: GRACE - 1 }]);
    clock.advance(1);
    expect(board.recent(GRACE)).toEqual([]); // a whole window: forgotten

    // Restarted with the secret under the same id: the announcement of reads [1] it replaces counts as heard then.
    push({ replica: 'b', seq: 3, at: clock.now(), reads: [1] });
    await tick();
    push({ replica: 'b', seq: 4, at: clock.now(), reads: [1, 2] });
    await tick();
    clock.advance(10);
    expect(board.recent(GRACE)).toEqual([{ reads: [1], agoMs: 10 }]);
    board.close();
  });
});
