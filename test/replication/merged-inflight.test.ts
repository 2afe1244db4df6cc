/**
 * The merge of the other replicas' load announcements (docs/replication.md, "Shared load"): a map
 * of last-writer-wins registers, one per replica, that forgets a replica silent past its hold.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeAnnouncement, encodeAnnouncement, MAX_HOLD_MS, type LoadAnnouncement } from '../../src/replication/load-announcement.js';
import { MergedInflight } from '../../src/replication/merged-inflight.js';

const SEEDED = { seed: 20261203, numRuns: 300 } as const;
const NODES = ['a', 'b', 'c', 'd'];

function announcement(replica: string, seq: number, inflight: Record<string, number>, holdMs = 2000, epoch = 'e1'): LoadAnnouncement {
  return { v: 1, replica, epoch, seq, holdMs, inflight };
}

/** A merge on a settable clock that also records what it told the table, per node. */
function merge(self = 'me') {
  let t = 0;
  const told = new Map<string, number>();
  const m = new MergedInflight(self, () => t, (nodeId, count) => told.set(nodeId, count));
  return { m, told, at: (ms: number) => void (t = ms) };
}

const counts = fc.dictionary(fc.constantFrom(...NODES), fc.integer({ min: 1, max: 5 }), { maxKeys: 4 });
const history = fc.array(fc.record({ replica: fc.constantFrom('r1', 'r2', 'r3'), inflight: counts }), { minLength: 1, maxLength: 12 });

describe('MergedInflight', () => {
  it('merges any delivery order, with repeats, into each replica\'s newest announcement summed per node', () => {
    fc.assert(
      fc.property(history, fc.array(fc.nat(), { minLength: 1, maxLength: 40 }), (sent, picks) => {
        // Each replica numbers its announcements 1, 2, … in the order it sent them.
        const next = new Map<string, number>();
        const all = sent.map((s) => {
          const seq = (next.get(s.replica) ?? 0) + 1;
          next.set(s.replica, seq);
          return announcement(s.replica, seq, s.inflight);
        });
        // Delivered in a shuffled order with repeats (picks), then every one once more (none lost for good).
        const delivered = [...picks.map((p) => all[p % all.length] as LoadAnnouncement), ...all.slice().reverse()];
        const { m, told } = merge();
        for (const a of delivered) m.receive(a);
        const newest = new Map<string, LoadAnnouncement>();
        for (const a of all) if ((newest.get(a.replica)?.seq ?? 0) < a.seq) newest.set(a.replica, a);
        for (const node of NODES) {
          const expected = [...newest.values()].reduce((sum, a) => sum + (a.inflight[node] ?? 0), 0);
          expect(m.count(node)).toBe(expected);
          expect(told.get(node) ?? 0).toBe(expected); // the table was told the same
        }
      }),
      SEEDED,
    );
  });

  it('applies an announcement once: a repeat or an older one changes nothing', () => {
    const { m } = merge();
    expect(m.receive(announcement('r1', 2, { a: 3 }))).toBe(true);
    expect(m.receive(announcement('r1', 2, { a: 9 }))).toBe(false);
    expect(m.receive(announcement('r1', 1, { a: 7 }))).toBe(false);
    expect(m.count('a')).toBe(3);
  });

  it('never merges its own announcements (NATS echoes them)', () => {
    const { m } = merge('me');
    expect(m.receive(announcement('me', 1, { a: 1 }))).toBe(false);
    expect(m.count('a')).toBe(0);
  });

  it('takes a restarted replica\'s new incarnation though its numbers start again', () => {
    const { m } = merge();
    m.receive(announcement('r1', 40, { a: 4 }, 2000, 'old'));
    expect(m.receive(announcement('r1', 1, { b: 1 }, 2000, 'new'))).toBe(true);
    expect([m.count('a'), m.count('b')]).toEqual([0, 1]);
  });

  it('stops counting a replica silent for its hold, not before; each announcement renews it', () => {
    const { m, told, at } = merge();
    at(1000);
    m.receive(announcement('r1', 1, { a: 2, b: 1 }, 2000));
    m.receive(announcement('r2', 1, { a: 1 }, 500));
    at(1400);
    m.receive(announcement('r1', 2, { a: 2, b: 1 }, 2000)); // r1 still holding: renewed to 3400
    at(1499);
    expect(m.expire()).toBe(0);
    at(1500);
    expect(m.expire()).toBe(1); // r2's hold ended
    expect(m.count('a')).toBe(2);
    at(3399);
    expect(m.expire()).toBe(0);
    expect(m.replicas()).toEqual(['r1']);
    at(3400);
    expect(m.expire()).toBe(1);
    expect([m.count('a'), m.count('b'), told.get('a'), told.get('b')]).toEqual([0, 0, 0, 0]);
    expect(m.replicas()).toEqual([]);
  });

  it('forgets a replica at once when it says it left (hold 0), and refuses its older words', () => {
    const { m } = merge();
    m.receive(announcement('r1', 1, { a: 2 }));
    m.receive(announcement('r1', 2, {}, 0));
    expect(m.count('a')).toBe(0);
    expect(m.receive(announcement('r1', 1, { a: 2 }))).toBe(false);
  });

  it('drops everything it heard on clear()', () => {
    const { m, told } = merge();
    m.receive(announcement('r1', 1, { a: 2 }));
    m.receive(announcement('r2', 1, { a: 1, c: 1 }));
    m.clear();
    expect([m.count('a'), m.count('c'), told.get('a'), told.get('c')]).toEqual([0, 0, 0, 0]);
  });
});

describe('the announcement\'s wire form', () => {
  const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

  it('reads back what it wrote, parts included', () => {
    const a: LoadAnnouncement = { v: 1, replica: 'r1', epoch: 'x', seq: 3, holdMs: 2000, inflight: { gpu: 2 }, parts: { prefix: [['gpu', 'abc']] } };
    expect(decodeAnnouncement(encodeAnnouncement(a))).toEqual(a);
  });

  it('refuses, whole, what it cannot read', () => {
    const good = { v: 1, replica: 'r1', epoch: 'x', seq: 1, holdMs: 10, inflight: {} };
    for (const bad of [
      'not json',
      { ...good, v: 2 },
      { ...good, replica: '' },
      { ...good, seq: 0 },
      { ...good, seq: 1.5 },
      { ...good, holdMs: -1 },
      { ...good, inflight: { gpu: 0 } },
      { ...good, inflight: { gpu: 'two' } },
      { ...good, inflight: [1] },
      { ...good, parts: 'x' },
    ]) {
      expect(decodeAnnouncement(typeof bad === 'string' ? new TextEncoder().encode(bad) : bytes(bad))).toBeUndefined();
    }
  });

  it('cuts a hold past the longest to it', () => {
    expect(decodeAnnouncement(bytes({ v: 1, replica: 'r1', epoch: 'x', seq: 1, holdMs: 1e9, inflight: {} }))?.holdMs).toBe(MAX_HOLD_MS);
  });
});
