/**
 * The format a writer puts on the log (docs/replication.md, "Upgrades: format versions"), without
 * NATS: never below the log's floor; above it only after a whole liveness window of announcements
 * heard, and only a version every live replica reads.
 */
import { describe, expect, it } from 'vitest';
import { writeFormat } from '../../src/replication/write-format.js';

const W = 60_000;
const rule = (floor: number, heardForMs: number, liveReads: number[][], writes = [1, 2]) => writeFormat({ writes, floor, heardForMs, windowMs: W, liveReads });

describe('writeFormat', () => {
  it('writes the floor until it has heard announcements for a whole liveness window', () => {
    expect(rule(1, 0, [])).toBe(1); // nothing heard yet: the floor, not its newest
    expect(rule(1, 0, [[1, 2]])).toBe(1);
    expect(rule(1, W - 1, [[1, 2], [1, 2]])).toBe(1);
    expect(rule(1, W, [[1, 2], [1, 2]])).toBe(2);
    expect(rule(2, 0, [])).toBe(2); // a log signed from its genesis: signed from the first entry
  });

  it('goes above the floor only to a version every live replica reads', () => {
    // One replica of the release before is live: everyone keeps writing 1, so it never halts.
    expect(rule(1, W, [[1, 2], [1]])).toBe(1);
    expect(rule(1, W, [[1, 2]])).toBe(2);
    expect(rule(1, W, [[1, 2, 3], [1, 2]], [1, 2, 3])).toBe(2);
    expect(rule(1, W, [[1, 2, 3]], [1, 2, 3])).toBe(3);
  });

  it('never writes below the floor, whatever is announced', () => {
    expect(rule(2, W, [[1, 2], [1]])).toBe(2); // an announcement of reads: [1] does not take a signed log back
    expect(rule(2, W, [[1]])).toBe(2);
    expect(rule(2, W, [[1, 2, 3], [1, 3]], [1, 2, 3])).toBe(3);
    expect(rule(2, W, [[1, 2, 3], [1]], [1, 2, 3])).toBe(2);
    expect(rule(1, W, [[1]], [1])).toBe(1); // a replica without the secret: version 1 only
    expect(rule(2, 0, [], [2, 3])).toBe(2);
  });

  it('goes above the floor only a whole window after an announcement lacking the version was last live or withdrawn', () => {
    const at = (recent: { reads: number[]; agoMs: number }[]) => writeFormat({ writes: [1, 2], floor: 1, heardForMs: W, windowMs: W, liveReads: [[1, 2]], recent });
    expect(at([{ reads: [1], agoMs: 0 }])).toBe(1); // withdrawn just now (a stop, or a stale view's cleanup)
    expect(at([{ reads: [1], agoMs: W - 1 }])).toBe(1);
    expect(at([{ reads: [1], agoMs: W }])).toBe(2);
    expect(at([{ reads: [1, 2], agoMs: 0 }])).toBe(2); // it read 2: nothing to wait for
    expect(writeFormat({ writes: [1, 2], floor: 2, heardForMs: 0, windowMs: W, liveReads: [], recent: [{ reads: [1], agoMs: 0 }] })).toBe(2); // never below the floor
  });
});
