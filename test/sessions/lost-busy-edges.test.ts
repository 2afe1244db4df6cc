/**
 * The edges of `lost` (StateLostError) and of a busy party checking a call (docs/sessions.md): a
 * node that says it lost the state even to a fresh call is a failure, not retried on itself; a
 * stage whose check was busy is called again fresh (its node already ran the step).
 */
import { describe, expect, it } from 'vitest';
import { NodeBusyError, verifySpans, type StageRunner } from '../../src/sessions/index.js';
import { harness, nextInput, referenceRun } from './session-fixtures.js';

describe('lost answered to a fresh call', () => {
  it('a node that answers 409 UnknownSession even to fresh calls (with their replay) is not retried fresh on itself until the budget runs out: the step goes around it', async () => {
    const h = harness();
    const probe = h.swarm.session({}, h.runStage, { backoffMs: 0 });
    const a = probe.route.stages[0]?.nodeId as string;
    probe.close();
    h.behaviour.set(a, () => ({ kind: 'lost' })); // hostile, or an engine that cannot hold the state at all
    const failed: string[] = [];
    for (let i = 0; i < 10; i++) {
      const s = h.swarm.session({}, h.runStage, { backoffMs: 0 });
      try {
        await h.drive(s.step(i));
      } catch (error) {
        failed.push((error as { code: string }).code);
      }
      s.close();
    }
    // Today: every session routed through `a` calls it fresh retries + 1 times, fails RetryBudgetExhausted,
    // and `a` is neither charged nor avoided (neutral release: no latency penalty), so the next session goes there again.
    expect(failed).toEqual([]);
  });
});

describe('a busy third party of verifySpans', () => {
  it('the stage\'s node, which already ran the step, is not called warm again for the same step (its state would hold the step twice)', async () => {
    const h = harness();
    let verifyAt = -1; // the step whose calls are sampled
    // A copy `x` that disagrees, and a third party `z` always at capacity.
    const runner: StageRunner<number> = (stage, input, ctx) => {
      if (stage.nodeId === 'x') return Promise.resolve(input ^ 0x55);
      if (stage.nodeId === 'z') return Promise.reject(new NodeBusyError('z', 'agent "z" answered 503: Full'));
      return h.runStage(stage, input, ctx);
    };
    let drawn = false;
    const v = verifySpans(runner, {
      sample: 0.5,
      random: () => (verifyAt >= 0 && !drawn ? ((drawn = true), 0) : 0.99), // one call drawn: step 2's first
      copies: (_m, s, e, exclude) => (exclude.has('x') ? [] : [[{ nodeId: 'x', layerStart: s, layerEnd: e }]]),
      thirdNodes: () => ['z'],
      quarantine: () => {},
    });
    const session = h.swarm.session({}, v.runner, { backoffMs: 0 });
    const outputs: number[] = [];
    let x = 5;
    for (let t = 0; t < 4; t++) {
      if (t === 2) verifyAt = t;
      outputs.push(await h.drive(session.step(x)));
      x = nextInput(outputs[t] as number, t);
    }
    session.close();
    expect(outputs).toEqual(referenceRun(5, 4).outputs);
  });
});
