/**
 * `session.restore(inputs)`: a session that continues a generation another session ran (an
 * orchestrator that died) gives the reference outputs — every stage's first call replays the
 * earlier step inputs, and a node failing after the restore is rebuilt with the whole history.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SessionError } from '../../src/core/errors.js';
import { harness, nextInput, referenceRun } from './session-fixtures.js';

describe('session.restore', () => {
  it('continues from step k with the reference outputs, the first call of every stage replaying the k inputs', async () => {
    const ref = referenceRun(11, 9);
    const h = harness();
    const first = h.swarm.session({ tokens: 64 }, h.runStage);
    const k = 4;
    for (let t = 0; t < k; t++) expect(await h.drive(first.step(ref.inputs[t] as number))).toBe(ref.outputs[t]);
    first.close(); // the first orchestrator is gone: its nodes' state for that session is of no use

    const second = h.swarm.session({ tokens: 64 }, h.runStage);
    second.restore(ref.inputs.slice(0, k));
    const from = h.calls.length;
    const outputs: number[] = [];
    let x = ref.inputs[k] as number;
    for (let t = k; t < 9; t++) {
      const y = await h.drive(second.step(x));
      outputs.push(y);
      x = nextInput(y, t);
    }
    expect(outputs).toEqual(ref.outputs.slice(k));
    const firstStep = h.calls.slice(from).filter((c) => c.step === k);
    expect(firstStep.length).toBeGreaterThan(0);
    expect(firstStep.every((c) => c.fresh && c.replay.length === k)).toBe(true);
    expect(firstStep[0]?.replay).toEqual(ref.inputs.slice(0, k));
    expect(second.stats().steps).toBe(9);
    second.close();
  });

  it('rebuilds a node that fails after the restore from the restored history too (any kill step, any node; seeded)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 7 }), async (k, after, victim) => {
        const steps = k + after + 2;
        const ref = referenceRun(3, steps);
        const h = harness();
        const session = h.swarm.session({ tokens: 64 }, h.runStage);
        session.restore(ref.inputs.slice(0, k));
        let x = ref.inputs[k] as number;
        for (let t = k; t < steps; t++) {
          if (t === k + after + 1) {
            const stages = session.route.stages;
            h.kill((stages[victim % stages.length] as { nodeId: string }).nodeId);
          }
          const y = await h.drive(session.step(x));
          expect(y).toBe(ref.outputs[t]);
          x = nextInput(y, t);
        }
        session.close();
        h.swarm.stop();
      }),
      { seed: 29, numRuns: 25 },
    );
  });

  it('is refused after the first step', async () => {
    const h = harness();
    const session = h.swarm.session({ tokens: 64 }, h.runStage);
    await h.drive(session.step(1));
    expect(() => session.restore([1, 2])).toThrow(SessionError);
    session.close();
    expect(() => session.restore([1])).toThrow(/restored only when open/);
  });
});
