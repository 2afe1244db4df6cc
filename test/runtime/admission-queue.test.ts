/**
 * The admission queue against a plain reference (a sorted array): after any sequence of pushes,
 * removals and serves, `next()` is the head a strict reading of docs/admission.md names — the
 * highest band, a resumed waiter first, then first come first served (or earliest deadline) — and
 * the victim of a full queue is the newest not-resumed waiter of the lowest band below the arrival.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionQueue, type Waiter } from '../../src/runtime/admission-queue.js';

const SEED = 27;

interface W extends Waiter {
  readonly at: number[];
}

type Op = { readonly k: 'push'; readonly priority: number; readonly deadline: number; readonly resumed: boolean } | { readonly k: 'remove'; readonly pick: number } | { readonly k: 'serve' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant('push' as const), priority: fc.integer({ min: -2, max: 3 }), deadline: fc.oneof(fc.constant(Infinity), fc.integer({ min: 0, max: 50 })), resumed: fc.boolean() }),
  fc.record({ k: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({ k: fc.constant('serve' as const) }),
);

/** The reference order: higher band, resumed, then (deadline), then arrival. */
function before(byDeadline: boolean) {
  return (a: W, b: W): number => b.priority - a.priority || Number(b.resumed) - Number(a.resumed) || (byDeadline && a.deadlineAt !== b.deadlineAt ? (a.deadlineAt < b.deadlineAt ? -1 : 1) : 0) || a.seq - b.seq;
}

describe('AdmissionQueue', () => {
  for (const byDeadline of [false, true]) {
    it(`serves in the reference order (${byDeadline ? 'earliest deadline' : 'first come first served'} within a band), under any sequence of operations`, () => {
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 120 }), (ops) => {
          const q = new AdmissionQueue<W>(byDeadline, new Map(), 100);
          const model: W[] = [];
          let seq = 0;
          for (const op of ops) {
            if (op.k === 'push') {
              const w: W = { at: [-1, -1, -1], seq: ++seq, priority: op.priority, deadlineAt: op.deadline, resumed: op.resumed };
              q.push(w);
              model.push(w);
            } else if (op.k === 'remove' && model.length > 0) {
              const w = model.splice(op.pick % model.length, 1)[0] as W;
              expect(q.remove(w)).toBe(true);
              expect(q.remove(w)).toBe(false); // nothing leaves twice
            } else if (op.k === 'serve') {
              const head = q.next();
              const expected = [...model].sort(before(byDeadline))[0];
              expect(head).toBe(expected);
              if (head !== undefined) {
                q.remove(head);
                model.splice(model.indexOf(head), 1);
              }
            }
            expect(q.size).toBe(model.length);
            const lowest = Math.min(...model.map((w) => w.priority));
            const victims = model.filter((w) => w.priority === lowest).sort((a, b) => Number(a.resumed) - Number(b.resumed) || b.seq - a.seq);
            expect(q.victimFor(lowest + 1)).toBe(model.length === 0 ? undefined : victims[0]);
            expect(q.victimFor(lowest)).toBeUndefined();
          }
        }),
        { seed: SEED, numRuns: 200 },
      );
    });
  }

  it('serves a band under its minimum share of the window first, and strict bands above the shares', () => {
    const q = new AdmissionQueue<W>(false, new Map([[0, 0.5]]), 4);
    let seq = 0;
    const push = (priority: number) => q.push({ at: [-1, -1, -1], seq: ++seq, priority, deadlineAt: Infinity, resumed: false });
    [5, 5, 0, 0].forEach(push);
    const served: number[] = [];
    for (let i = 0; i < 4; i++) {
      const w = q.next() as W;
      q.remove(w);
      q.admitted(w.priority);
      served.push(w.priority);
    }
    // Band 0 is under its half of an empty window, so first; then at 1 of 1 and 1 of 2 it is not
    // under its share, so band 5 goes twice; then band 0 is all that waits.
    expect(served).toEqual([0, 5, 5, 0]);
  });
});
