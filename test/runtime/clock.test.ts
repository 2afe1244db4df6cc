import { describe, expect, it } from 'vitest';
import { createActor, setup } from 'xstate';
import { ManualClock, systemClock } from '../../src/runtime/clock.js';

describe('ManualClock', () => {
  it('fires due timers in time order, each at its own time, then stops at the end of the window', () => {
    const clock = new ManualClock(100);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 50);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 20);
    clock.setTimeout(() => seen.push(`c@${clock.now()}`), 500);
    clock.advance(100);
    expect(seen).toEqual(['a@120', 'b@150']);
    expect(clock.now()).toBe(200);
    expect(clock.pending()).toBe(1);
    expect(clock.nextDue()).toBe(600);
  });

  it('fires timers of equal time in the order they were set', () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    for (let i = 0; i < 20; i++) clock.setTimeout(() => seen.push(i), 10);
    clock.advance(10);
    expect(seen).toEqual([...Array(20).keys()]);
  });

  it('fires, inside the same window, the timers that fired timers set', () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const tick = () => {
      seen.push(clock.now());
      clock.setTimeout(tick, 30);
    };
    clock.setTimeout(tick, 30);
    clock.advance(100);
    expect(seen).toEqual([30, 60, 90]);
    expect(clock.pending()).toBe(1);
  });

  it('never fires a cleared timer', () => {
    const clock = new ManualClock();
    let fired = false;
    const handle = clock.setTimeout(() => (fired = true), 5);
    clock.clearTimeout(handle);
    clock.clearTimeout('not a handle');
    clock.advance(10);
    expect(fired).toBe(false);
    expect(clock.pending()).toBe(0);
  });

  it('set() moves to a time and fires what is due; time never goes back', () => {
    const clock = new ManualClock();
    let at = -1;
    clock.setTimeout(() => (at = clock.now()), 40);
    clock.set(1000);
    expect(at).toBe(40);
    expect(() => clock.set(999)).toThrow(/cannot go back from 1000 to 999/);
    expect(() => clock.advance(-1)).toThrow(/ms must be a finite number >= 0, got -1/);
  });

  it("drives XState's delayed transitions as the actor clock", () => {
    const machine = setup({}).createMachine({ initial: 'a', states: { a: { after: { 1000: 'b' } }, b: { after: { 500: 'c' } }, c: {} } });
    const clock = new ManualClock();
    const actor = createActor(machine, { clock });
    actor.start();
    clock.advance(999);
    expect(actor.getSnapshot().value).toBe('a');
    clock.advance(1);
    expect(actor.getSnapshot().value).toBe('b');
    clock.advance(10_000);
    expect(actor.getSnapshot().value).toBe('c');
    actor.stop();
  });

  it('systemClock has the same shape on the host timers', () => {
    const handle = systemClock.setTimeout(() => {
      throw new Error('cleared timer fired');
    }, 60_000);
    systemClock.clearTimeout(handle);
    expect(typeof systemClock.now()).toBe('number');
  });
});
