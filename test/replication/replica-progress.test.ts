/**
 * The progress board without NATS (docs/replication.md, "Compaction" and "Upgrades: format
 * versions"): a fake KV bucket delivers the announcements as the watch would; the board says which
 * are live, and remembers for a window an announcement that was live or withdrawn.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { ANNOUNCED_AHEAD_MS, ProgressBoard } from '../../src/replication/replica-progress.js';
import { writeFormat } from '../../src/replication/write-format.js';
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
    expect(board.recent(GRACE)).toEqual([{ replica: 'old', reads: [1], agoMs: 0 }]);
    clock.advance(GRACE - 1);
    expect(board.recent(GRACE)).toEqual([{ replica: 'old', reads: [1], agoMs: GRACE - 1 }]);
    clock.advance(1);
    expect(board.recent(GRACE)).toEqual([]); // a whole window: forgotten

    // Restarted with the secret under the same id: the announcement of reads [1] it replaces counts as heard then.
    push({ replica: 'b', seq: 3, at: clock.now(), reads: [1] });
    await tick();
    push({ replica: 'b', seq: 4, at: clock.now(), reads: [1, 2] });
    await tick();
    clock.advance(10);
    expect(board.recent(GRACE)).toEqual([{ replica: 'b', reads: [1], agoMs: 10 }]);
    board.close();
  });

  it('does not hear an announcement said more than 30 s ahead of its clock (a forged one would hold the trim and the format for ever)', async () => {
    const clock = new ManualClock(T);
    const { kv, push } = fakeKv();
    const board = new ProgressBoard(kv, undefined, () => 1, () => clock.now());
    await board.open();
    push({ replica: 'ghost', seq: 0, at: T + 10 * 365 * 86_400_000, reads: [1] });
    push({ replica: 'skewed', seq: 5, at: T + ANNOUNCED_AHEAD_MS, reads: [1] }); // a clock 30 s ahead is still heard
    await tick();
    const { live, silent } = board.read(clock.now(), GRACE);
    expect(live.map((p) => p.replica)).toEqual(['skewed']);
    expect(silent.map((p) => p.replica)).toEqual(['ghost']); // so it is cleared away at the next boundary
    // Still remembered as seen now (this replica's clock) while it is on the board: it lacks version 2 for a window more.
    expect(board.recent(GRACE).map((r) => r.replica).sort()).toEqual(['ghost', 'skewed']);
    await board.withdraw('ghost');
    clock.advance(GRACE);
    board.read(clock.now(), GRACE);
    expect(board.recent(GRACE).map((r) => r.replica)).toEqual(['skewed']); // forgotten a window after its withdrawal
    board.close();
  });

  it('a live version-1 replica whose clock runs 31 s ahead holds the writer at version 1 (it re-announces every quarter window)', async () => {
    const clock = new ManualClock(T);
    const { kv, push } = fakeKv();
    const board = new ProgressBoard(kv, undefined, () => 1, () => clock.now());
    await board.open();
    const formats: number[] = [];
    for (let i = 0; i < 12; i++) {
      push({ replica: 'old', seq: 3 + i, at: clock.now() + ANNOUNCED_AHEAD_MS + 1000, reads: [1] });
      push({ replica: 'new', seq: 3 + i, at: clock.now(), reads: [1, 2] });
      await tick();
      const live = board.read(clock.now(), GRACE).live.map((p) => p.reads);
      formats.push(writeFormat({ writes: [1, 2], floor: 1, heardForMs: 10 * GRACE, windowMs: GRACE, liveReads: live, recent: board.recent(GRACE) }));
      clock.advance(GRACE / 4);
    }
    expect(formats).toEqual(Array.from({ length: 12 }, () => 1));
    board.close();
  });
});
