import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FILL_VISITED, FillOrder, type FillSlot } from '../../src/prefix/fill-order.js';

const slot = (id: string): FillSlot => ({ id, fill: 0, fillModel: undefined, at: [-1] });

describe('FillOrder', () => {
  it('gives the least-filled eligible copy, ties by id, and levels a copy added again (wiped) or new', () => {
    const order = new FillOrder<FillSlot>();
    const [a, b, c] = [slot('a'), slot('b'), slot('c')];
    for (const s of [c, b, a]) order.add('m', s);
    expect(order.least('m', () => true)).toBe(a);
    order.grew(a, 50, 100);
    order.grew(b, 20, 100);
    expect(order.least('m', () => true)).toBe(c);
    order.grew(c, 30, 100);
    expect(order.least('m', () => true)).toBe(b); // 0.2 < 0.3 < 0.5
    order.add('m', a); // wiped: level with the least filled, not back to 0
    expect(a.fill).toBeCloseTo(0.2);
    const d = slot('d');
    order.add('m', d);
    expect(d.fill).toBeCloseTo(0.2);
    order.remove(b);
    expect([b.at[0], b.fillModel]).toEqual([-1, undefined]);
    expect(order.least('m', () => true)).toBe(a);
    expect(order.least('other', () => true)).toBeUndefined();
    order.add('other', a); // moved to another model's order: out of the first
    expect(order.least('m', (s) => s === a)).toBeUndefined();
    expect(order.least('other', () => true)).toBe(a);
  });

  it('a copy passed over (broken, suspect) is raised just past the fill of the copy that took the prompt', () => {
    const order = new FillOrder<FillSlot>();
    const [down, up] = [slot('a'), slot('b')];
    order.add('m', down);
    order.add('m', up);
    for (let i = 0; i < 10; i++) {
      const c = order.least('m', (s) => s !== down) as FillSlot;
      order.grew(c, 10, 100);
    }
    expect(up.fill).toBeCloseTo(1);
    expect(down.fill).toBeGreaterThan(0.9); // raised at each pass, past the fill the taker had then
    expect(down.fill).toBeLessThan(0.9 + 1e-9);
    // Back: it takes its turn, not the next ten prompts.
    const next = [0, 1, 2, 3].map(() => {
      const c = order.least('m', () => true) as FillSlot;
      order.grew(c, 10, 100);
      return c.id;
    });
    expect(next).toEqual(['a', 'b', 'a', 'b']);
  });

  it('a capacity of 0 counts as one token: such a copy takes a prompt in turn, far behind the others', () => {
    const order = new FillOrder<FillSlot>();
    const [x, y] = [slot('x'), slot('y')];
    order.add('m', x);
    order.add('m', y);
    order.grew(x, 100, 0);
    expect(x.fill).toBe(100);
    expect(order.least('m', () => true)).toBe(y);
    order.grew(y, 100, 0);
    expect(order.least('m', () => true)).toBe(x); // all at capacity 0: they still take turns
  });

  it('looks at most FILL_VISITED copies, in fill order, and raises those it passed over', () => {
    const order = new FillOrder<FillSlot>();
    const slots = Array.from({ length: 100 }, (_, i) => slot(`c${String(i).padStart(3, '0')}`));
    slots.forEach((s, i) => {
      order.add('m', s);
      order.grew(s, i, 1);
    });
    const seen: string[] = [];
    expect(order.least('m', (s) => (seen.push(s.id), false))).toBeUndefined();
    expect(seen).toEqual(slots.slice(0, FILL_VISITED).map((s) => s.id));
    // Raised past the first copy not looked at: the next walk reaches it first.
    expect((slots[0] as FillSlot).fill).toBeGreaterThan(FILL_VISITED);
    expect(order.least('m', (s) => s === slots[FILL_VISITED])).toBe(slots[FILL_VISITED]);
  });

  it('property: least is the minimum (fill, id) over eligible copies, and a copy\'s place says whether it is in the order', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 1_000 }), fc.boolean()), { minLength: 1, maxLength: 60 }), (ops) => {
        const order = new FillOrder<FillSlot>();
        const slots = Array.from({ length: 12 }, (_, i) => slot(`s${i}`));
        const inOrder = new Set<FillSlot>();
        for (const [k, tokens, drop] of ops) {
          const s = slots[k % 12] as FillSlot;
          if (!inOrder.has(s)) {
            order.add('m', s);
            inOrder.add(s);
          } else if (drop && k % 5 === 0) {
            order.remove(s);
            inOrder.delete(s);
          } else order.grew(s, tokens, 100);
        }
        const eligible = (s: FillSlot) => Number(s.id.slice(1)) % 3 !== 0;
        const expected = [...inOrder].filter(eligible).sort((x, y) => x.fill - y.fill || (x.id < y.id ? -1 : 1))[0];
        expect(order.least('m', eligible)).toBe(expected);
        for (const s of slots) expect((s.at[0] as number) >= 0).toBe(inOrder.has(s));
      }),
      { seed: 7, numRuns: 300 },
    );
  });
});
