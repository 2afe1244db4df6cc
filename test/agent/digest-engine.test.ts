/** DigestEngine: the stand-in engine behind the StageEngine seam, exact to the digest of src/core/digest-model.ts. */
import { describe, expect, it } from 'vitest';
import { DigestReference } from '../../src/core/digest-model.js';
import { systemClock } from '../../src/runtime/clock.js';
import { DigestEngine } from '../../src/agent/engines/digest-engine.js';
import { digestOf, digestTensor } from '../../src/wire/digest.js';
import type { StageSpan, StepOutput } from '../../src/agent/stage-engine.js';
import { ServeError } from '../../src/wire/serve-error.js';

const engineOf = (extra: Partial<ConstructorParameters<typeof DigestEngine>[0]> = {}) => new DigestEngine({ score: 1, perLayerMs: 0, jitter: 0, seed: 7, maxStageMs: 60_000, kvCacheGb: 1, clock: systemClock, ...extra });
const span = (layerStart: number, layerEnd: number): StageSpan => ({ modelId: 'base', layerStart, layerEnd, layers: 8 });
const signal = new AbortController().signal;
const out = async (engine: DigestEngine, sessionId: string, s: StageSpan, step: number, x: number) => digestOf(((await engine.step({ sessionId, span: s, step, input: digestTensor(x), signal })) as StepOutput).output, 'output');

describe('DigestEngine', () => {
  it('gives, split over two spans and steps, the outputs of one holder of every layer', async () => {
    const engine = engineOf();
    const reference = new DigestReference(8);
    await engine.rebuild('s', span(0, 3), [], signal);
    await engine.rebuild('s', span(3, 8), [], signal);
    let x = 12345;
    for (let step = 0; step < 4; step++) {
      const mid = await out(engine, 's', span(0, 3), step, x);
      const y = await out(engine, 's', span(3, 8), step, mid);
      expect(y).toBe(reference.step(x));
      x = y;
    }
    expect(engine.holds()).toMatchObject({ sessions: 1, cachedTokens: 8 });
  });

  it('rebuilds a replacement from its replay: the next output is the one it would have given', async () => {
    const a = engineOf();
    const b = engineOf();
    await a.rebuild('s', span(0, 8), [], signal);
    const inputs = [1, 2, 3];
    const outputs: number[] = [];
    for (const [step, x] of inputs.entries()) outputs.push(await out(a, 's', span(0, 8), step, x));
    const replayed = await b.rebuild('s', span(0, 8), inputs.map(digestTensor), signal);
    expect(replayed.map((t, i) => digestOf(t, `replay/${i}`))).toEqual(outputs);
    expect(await out(b, 's', span(0, 8), 3, 4)).toBe(await out(a, 's', span(0, 8), 3, 4));
  });

  it('refuses a step of a session it holds nothing of (409 UnknownSession), and after a drop', async () => {
    const engine = engineOf();
    await expect(engine.step({ sessionId: 'x', span: span(0, 8), step: 1, input: digestTensor(1), signal })).rejects.toMatchObject({ code: 'UnknownSession', status: 409, field: 'sessionId' });
    await engine.rebuild('x', span(0, 8), [], signal);
    expect(engine.drop('x')).toBe(true);
    expect(engine.drop('x')).toBe(false);
    await expect(engine.step({ sessionId: 'x', span: span(0, 8), step: 1, input: digestTensor(1), signal })).rejects.toBeInstanceOf(ServeError);
  });

  it('refuses a call computed past maxStageMs (422, field tokens), a NaN time too', () => {
    const engine = engineOf({ perLayerMs: 2, maxStageMs: 1000 });
    expect(() => engine.check({ sessionId: 's', span: span(0, 8), step: 0, tokens: 62, replay: 0 })).not.toThrow(); // 8 × 62 × 2 = 992 ms
    expect(() => engine.check({ sessionId: 's', span: span(0, 8), step: 0, tokens: 62, replay: 1 })).toThrow(/over this agent's bound of 1000 ms/);
    expect(() => engineOf({ perLayerMs: Number.NaN }).check({ sessionId: 's', span: span(0, 8), step: 0, tokens: 1, replay: 0 })).toThrow(ServeError);
  });

  it('lies at lieRate 1 (the last bit flipped), and refuses any tensor but u32 [1, 1], naming the field', async () => {
    const honest = engineOf();
    const liar = engineOf({ lieRate: 1 });
    for (const e of [honest, liar]) await e.rebuild('s', span(0, 8), [], signal);
    expect(await out(liar, 's', span(0, 8), 0, 9)).toBe((await out(honest, 's', span(0, 8), 0, 9)) ^ 1);
    const f32 = { dtype: 'f32' as const, shape: [1, 1], data: new Uint8Array(4) };
    await expect(honest.rebuild('s', span(0, 8), [digestTensor(1), f32], signal)).rejects.toMatchObject({ field: 'replay/1' });
    await expect(honest.step({ sessionId: 's', span: span(0, 8), step: 1, input: f32, signal })).rejects.toMatchObject({ field: 'input' });
  });

  it('stops a step whose call is cancelled, changing nothing', async () => {
    const engine = engineOf({ perLayerMs: 1000 });
    await engine.rebuild('s', span(0, 8), [], signal);
    const call = new AbortController();
    const running = engine.step({ sessionId: 's', span: span(0, 8), step: 0, input: digestTensor(1), signal: call.signal });
    call.abort(new Error('dropped'));
    await expect(running).rejects.toThrow('dropped');
    expect(engine.holds().cachedTokens).toBe(0);
  });
});
