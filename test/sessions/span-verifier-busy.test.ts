/**
 * verifySpans and a third party at capacity (NodeBusyError, an agent's 503 Full): no dispute.
 * Another third party settles it (the liar quarantined); when every one is busy, the busy error
 * goes on and the session retries the step later (docs/sessions.md, "A busy node").
 */
import { describe, expect, it } from 'vitest';
import { runLayers, type LayerCaches } from '../../src/core/digest-model.js';
import { NodeBusyError } from '../../src/sessions/node-busy.js';
import { verifySpans, type SpanHop, type SpanVerdict } from '../../src/sessions/span-verifier.js';
import type { SessionStage, StageRunner } from '../../src/sessions/session-types.js';

const whole = (id: string): SpanHop[] => [{ nodeId: id, layerStart: 0, layerEnd: 8 }];

describe('verifySpans and a busy third party', () => {
  it('settles on another third party when the one drawn is at capacity: the liar quarantined, no dispute', async () => {
    const caches = new Map<string, LayerCaches>();
    const runner: StageRunner<number> = (s, input, c) => {
      if (s.nodeId === 'z') return Promise.reject(new NodeBusyError('z', 'agent "z" answered 503: Full'));
      const key = `${s.nodeId}/${s.sessionId}`;
      const cache = caches.get(key) ?? new Map();
      caches.set(key, cache);
      c.replayed(c.replay.map((x) => runLayers(x, s.layerStart, s.layerEnd, cache)));
      const out = runLayers(input, s.layerStart, s.layerEnd, cache);
      return Promise.resolve(s.nodeId === 'a' ? (out ^ 1) >>> 0 : out); // a lies
    };
    const verdicts: SpanVerdict[] = [];
    const copies = (_m: string, _s: number, _e: number, exclude: ReadonlySet<string>) => [whole('x')].filter((c) => !exclude.has(c[0]?.nodeId as string));
    const v = verifySpans(runner, { sample: 1, random: () => 0, copies, thirdNodes: () => ['z', 'w'], quarantine: () => {}, onVerdict: (k) => verdicts.push(k) });
    const stage: SessionStage = { nodeId: 'a', modelId: 'm', layerStart: 0, layerEnd: 8, stageIndex: 0, sessionId: 's' };
    const result = await Promise.resolve(v.runner(stage, 7, { signal: new AbortController().signal, replay: [], fresh: true, step: 0, replayed: () => {} })).then(
      (output: number) => ({ output }),
      (error: unknown) => ({ error }),
    );
    expect(verdicts).toEqual(['quarantined']);
    expect(result).toEqual({ output: runLayers(7, 0, 8, new Map()) }); // the honest majority's
  });

  it('passes the busy error on, with no verdict, when every third party is at capacity', async () => {
    const runner: StageRunner<number> = (s, input) => {
      if (s.nodeId === 'z' || s.nodeId === 'w') return Promise.reject(new NodeBusyError(s.nodeId, `agent "${s.nodeId}" answered 503: Full`));
      return Promise.resolve(s.nodeId === 'a' ? input + 1 : input); // a and x disagree
    };
    const verdicts: SpanVerdict[] = [];
    const copies = (_m: string, _s: number, _e: number, exclude: ReadonlySet<string>) => [whole('x')].filter((c) => !exclude.has(c[0]?.nodeId as string));
    const v = verifySpans(runner, { sample: 1, random: () => 0, copies, thirdNodes: () => ['z', 'w'], quarantine: () => {}, onVerdict: (k) => verdicts.push(k) });
    const stage: SessionStage = { nodeId: 'a', modelId: 'm', layerStart: 0, layerEnd: 8, stageIndex: 0, sessionId: 's' };
    await expect(v.runner(stage, 7, { signal: new AbortController().signal, replay: [], fresh: true, step: 0, replayed: () => {} })).rejects.toBeInstanceOf(NodeBusyError);
    expect(verdicts).toEqual([]);
  });
});
