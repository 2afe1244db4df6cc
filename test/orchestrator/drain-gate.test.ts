/**
 * The drain gate on an injected clock: draining refuses new generations (503 Draining with a
 * retry-after), waits for the running ones up to the grace period, then hands back the rest with
 * the same answer; nothing running: done at once.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { DrainGate } from '../../src/orchestrator/drain-gate.js';
import { ServeError } from '../../src/wire/serve-error.js';

const flush = () => new Promise((r) => setTimeout(r, 0));

describe('DrainGate', () => {
  it('finishes what ends within the grace period, hands back the rest, refuses newcomers', async () => {
    const clock = new ManualClock(0);
    const gate = new DrainGate();
    const quick = gate.enter();
    const slow = gate.enter();
    // The slow generation ends once it is handed back (as an aborted session does).
    slow.signal.addEventListener('abort', () => gate.leave(slow));
    let report: Awaited<ReturnType<DrainGate['drain']>> | undefined;
    const drained = gate.drain(2000, clock).then((r) => (report = r));
    expect(gate.draining).toBe(true);
    let refused: unknown;
    try {
      gate.enter();
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ServeError);
    expect([(refused as ServeError).status, (refused as ServeError).code, (refused as ServeError).retryAfterMs]).toEqual([503, 'Draining', 2000]);
    clock.advance(500);
    gate.leave(quick);
    await flush();
    expect(report).toBeUndefined();
    expect(slow.signal.aborted).toBe(false);
    clock.advance(1500);
    await drained;
    expect(report).toEqual({ finished: 1, handedBack: 1 });
    expect(slow.signal.reason).toBeInstanceOf(ServeError);
    expect((slow.signal.reason as ServeError).message).toMatch(/grace period of 2000 ms/);
    expect(gate.size).toBe(0);
  });

  it('with nothing running, drains at once; everything ending early ends the wait early', async () => {
    const clock = new ManualClock(0);
    expect(await new DrainGate().drain(10_000, clock)).toEqual({ finished: 0, handedBack: 0 });
    const gate = new DrainGate();
    const one = gate.enter();
    const drained = gate.drain(10_000, clock);
    clock.advance(10);
    gate.leave(one);
    expect(await drained).toEqual({ finished: 1, handedBack: 0 });
    expect(clock.now()).toBe(10);
  });
});
