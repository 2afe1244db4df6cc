import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FILL_VISITED, FillOrder, type FillSlot } from '../../src/prefix/fill-order.js';

const slot = (id: string): FillSlot => ({ id, fill: 0, heapAt: -1 });

describe('FillOrder', () => {
  it('gives the least-filled eligible copy, ties by id, and levels a copy added or reset', () => {
    const order = new FillOrder<FillSlot>();
    const [a, b, c] = [slot('a'), slot('b'), slot('c')];
    for (const s of [c, b, a]) order.add('m', s, 100);
    expect(order.least('m', () => true)).toBe(a);
    order.grew('m', a, 50, 100);
    order.grew('m', b, 20, 100);
    expect(order.least('m', () => true)).toBe(c);
    order.grew('m', c, 30, 100);
    expect(order.least('m', () => true)).toBe(b); // 0.2 < 0.3 < 0.5
    expect(order.least('m', (s) => s !== b)).toBe(c);
    order.reset('m', a, 100); // wiped: level with the least filled, not back to 0
    expect(a.fill).toBeCloseTo(0.2);
    const d = slot('d');
    order.add('m', d, 100);
    expect(d.fill).toBeCloseTo(0.2);
    order.remove('m', b);
    expect(b.heapAt).toBe(-1);
    expect(order.least('m', () => true)).toBe(a);
    expect(order.least('other', () => true)).toBeUndefined();
  });

  it('a copy holding nothing (capacity 0) comes last and never grows', () => {
    const order = new FillOrder<FillSlot>();
    const [none, some] = [slot('a'), slot('b')];
    order.add('m', none, 0);
    order.add('m', some, 10);
    order.grew('m', some, 1_000, 10);
    order.grew('m', none, 1_000, 0);
    expect(none.fill).toBe(Infinity);
    expect(order.least('m', () => true)).toBe(some);
  });

  it('looks at most FILL_VISITED copies, in fill order', () => {
    const order = new FillOrder<FillSlot>();
    const slots = Array.from({ length: 100 }, (_, i) => slot(`c${String(i).padStart(3, '0')}`));
    slots.forEach((s, i) => {
      order.add('m', s, 1);
      order.grew('m', s, i, 1);
    });
    const seen: string[] = [];
    expect(order.least('m', (s) => (seen.push(s.id), false))).toBeUndefined();
    expect(seen).toEqual(slots.slice(0, FILL_VISITED).map((s) => s.id));
  });

  it('property: least is the minimum (fill, id) over eligible copies when few are passed over', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 1_000 }), fc.boolean()), { minLength: 1, maxLength: 60 }), (ops) => {
        const order = new FillOrder<FillSlot>();
        const slots = Array.from({ length: 12 }, (_, i) => slot(`s${i}`));
        const inOrder = new Set<FillSlot>();
        for (const [k, tokens, drop] of ops) {
          const s = slots[k % 12] as FillSlot;
          if (!inOrder.has(s)) {
            order.add('m', s, 100);
            inOrder.add(s);
          } else if (drop && k % 5 === 0) {
            order.remove('m', s);
            inOrder.delete(s);
          } else order.grew('m', s, tokens, 100);
        }
        const eligible = (s: FillSlot) => Number(s.id.slice(1)) % 3 !== 0;
        const expected = [...inOrder].filter(eligible).sort((x, y) => x.fill - y.fill || (x.id < y.id ? -1 : 1))[0];
        expect(order.least('m', eligible)).toBe(expected);
      }),
      { seed: 7, numRuns: 300 },
    );
  });
});
