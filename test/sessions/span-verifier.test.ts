import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DigestReference, runLayers, type LayerCaches } from '../../src/core/digest-model.js';
import { uniform } from '../../src/core/random.js';
import { verifySpans, type SpanHop, type SpanVerdict, type SpanVerifierOptions } from '../../src/sessions/span-verifier.js';
import { SpanStanding } from '../../src/sessions/span-standing.js';
import type { SessionStage, StageContext, StageRunner } from '../../src/sessions/session-types.js';

/**
 * verifySpans over in-process stand-in nodes running the stateful digest model: each node keeps
 * caches per session, a liar flips its output's low bit on the calls `lies` picks.
 */
function nodes(lies: (nodeId: string, sessionId: string, step: number) => boolean) {
  const caches = new Map<string, LayerCaches>();
  const calls: { nodeId: string; sessionId: string; layers: [number, number]; replay: number }[] = [];
  const runner: StageRunner<number> = (stage, input, context) => {
    const key = `${stage.nodeId}/${stage.sessionId}`;
    let held = caches.get(key);
    if (held === undefined) caches.set(key, (held = new Map()));
    if (context.fresh) for (let l = stage.layerStart; l < stage.layerEnd; l++) held.delete(l);
    const cache = held;
    calls.push({ nodeId: stage.nodeId, sessionId: stage.sessionId, layers: [stage.layerStart, stage.layerEnd], replay: context.replay.length });
    context.replayed(context.replay.map((x) => runLayers(x, stage.layerStart, stage.layerEnd, cache)));
    const out = runLayers(input, stage.layerStart, stage.layerEnd, cache);
    return lies(stage.nodeId, stage.sessionId, context.step) ? (out ^ 1) >>> 0 : out;
  };
  return { runner, calls };
}

const hashOf = (text: string): number => [...text].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
const context = (step: number): StageContext<number> => ({ signal: new AbortController().signal, replay: [], fresh: step === 0, step, replayed: () => {} });
const stage = (nodeId: string, layerStart = 0, layerEnd = 8): SessionStage => ({ nodeId, modelId: 'm', layerStart, layerEnd, stageIndex: 0, sessionId: 's' });

/** Copies of a span: single nodes `x`, `y`, `z` hold every layer; `p`+`q` split at layer 4. */
function copiesOf(chains: readonly (readonly SpanHop[])[]) {
  return (_m: string, start: number, end: number, exclude: ReadonlySet<string>) =>
    chains.map((c) => c.map((h) => ({ ...h, layerStart: Math.max(h.layerStart, start), layerEnd: Math.min(h.layerEnd, end) })).filter((h) => h.layerStart < h.layerEnd)).filter((c) => c.length > 0 && c.every((h) => !exclude.has(h.nodeId)));
}
const whole = (id: string): SpanHop[] => [{ nodeId: id, layerStart: 0, layerEnd: 8 }];
const split: SpanHop[] = [
  { nodeId: 'p', layerStart: 0, layerEnd: 4 },
  { nodeId: 'q', layerStart: 4, layerEnd: 8 },
];

/** Runs `steps` steps of session `s` on `primary`, every call verified; the outputs and what was decided. */
async function run(primary: string, chains: readonly (readonly SpanHop[])[], lies: (nodeId: string, sessionId: string, step: number) => boolean, steps: number, extra: Partial<SpanVerifierOptions<number>> = {}) {
  const { runner, calls } = nodes(lies);
  const verdicts: [SpanVerdict, string | undefined][] = [];
  const quarantined: string[] = [];
  const v = verifySpans(runner, { sample: 1, random: () => 0, copies: copiesOf(chains), quarantine: (id) => quarantined.push(id), onVerdict: (k, _s, blamed) => verdicts.push([k, blamed]), ...extra });
  const outputs: number[] = [];
  let x = 7;
  for (let t = 0; t < steps; t++) outputs.push((x = await v.runner(stage(primary), x, context(t))));
  return { outputs, verdicts, quarantined, calls, stats: v.stats() };
}

const reference = (steps: number) => {
  const r = new DigestReference(8);
  const out: number[] = [];
  let x = 7;
  for (let t = 0; t < steps; t++) out.push((x = r.step(x)));
  return out;
};

describe('verifySpans', () => {
  it('agrees with an honest copy, each check fresh with the earlier inputs as replay under its own session id', async () => {
    const r = await run('a', [whole('x')], () => false, 3);
    expect(r.outputs).toEqual(reference(3));
    expect(r.verdicts).toEqual([['agreed', undefined], ['agreed', undefined], ['agreed', undefined]]);
    expect(r.calls.filter((c) => c.nodeId === 'x').map((c) => [c.sessionId, c.replay])).toEqual([['s~v1', 0], ['s~v2', 1], ['s~v3', 2]]);
    expect(r.stats).toMatchObject({ calls: 3, extraCalls: 3, quarantined: [] });
  });

  it('quarantines a lying primary two to one and passes the majority output on', async () => {
    const r = await run('a', [whole('x'), whole('y')], (id, _s, step) => id === 'a' && step === 1, 3);
    expect(r.quarantined).toEqual(['a']);
    expect(r.verdicts[1]).toEqual(['quarantined', 'a']);
    expect(r.outputs).toEqual(reference(3)); // the lie never went on
    expect(r.stats.extraCalls).toBe(4); // one check a step, one tie-break
  });

  it('quarantines a lying single-node copy, not the primary', async () => {
    const r = await run('a', [whole('x'), whole('y')], (id) => id === 'x', 1);
    expect(r.quarantined).toEqual(['x']);
  });

  it('chains a copy over several nodes, each hop replayed from the previous hop\'s replay outputs', async () => {
    const r = await run('a', [split], () => false, 3);
    expect(r.verdicts.map((v) => v[0])).toEqual(['agreed', 'agreed', 'agreed']);
    expect(r.calls.filter((c) => c.nodeId === 'q').map((c) => c.replay)).toEqual([0, 1, 2]);
  });

  it('narrows an outvoted chain down to the hop a one-node re-run contradicts', async () => {
    const r = await run('a', [split, whole('y')], (id, sessionId) => id === 'q' && sessionId === 's~v1', 1);
    expect(r.verdicts).toEqual([['quarantined', 'q']]);
    expect(r.outputs).toEqual(reference(1));
  });

  it('returns the winner when no hop of a losing chain can be re-run alone (nobody blamed), and rejects Disputed when no third party exists', async () => {
    const other: SpanHop[] = [
      { nodeId: 'r', layerStart: 0, layerEnd: 2 },
      { nodeId: 's', layerStart: 2, layerEnd: 8 },
    ];
    const chained = await run('a', [split, other], (id) => id === 'p', 1);
    expect(chained.verdicts).toEqual([['inconclusive', undefined]]);
    expect(chained.outputs).toEqual(reference(1)); // the two chains' and a's majority
    const verdicts: SpanVerdict[] = [];
    const v = verifySpans(nodes((id) => id === 'a').runner, { sample: 1, random: () => 0, copies: copiesOf([whole('x')]), quarantine: () => {}, onVerdict: (k) => verdicts.push(k) });
    await expect(v.runner(stage('a'), 7, context(0))).rejects.toMatchObject({ name: 'SessionError', code: 'Disputed', message: expect.stringContaining('no third holder') });
    expect(verdicts).toEqual(['disputed']);
    expect(chained.quarantined).toEqual([]);
  });

  it('is no dispute when the call was given up while its third party ran (another generation took its node down): the abort goes on, no verdict', async () => {
    const honest = nodes((id) => id === 'a');
    const given = new AbortController();
    const gone = new Error('stage 0 on node "a" was given up: node-down');
    const runner: StageRunner<number> = (s, input, c) => {
      if (s.nodeId !== 'z') return honest.runner(s, input, c);
      given.abort(gone); // the node of the call went down meanwhile; the third's call is cancelled with it
      return Promise.reject(gone);
    };
    const verdicts: SpanVerdict[] = [];
    const v = verifySpans(runner, { sample: 1, random: () => 0, copies: copiesOf([whole('x')]), thirdNodes: () => ['z'], quarantine: () => {}, onVerdict: (k) => verdicts.push(k) });
    await expect(v.runner(stage('a'), 7, { ...context(0), signal: given.signal })).rejects.toBe(gone);
    expect(verdicts).toEqual([]);
    // Still a dispute when the third's call fails on its own.
    const failing: StageRunner<number> = (s, input, c) => (s.nodeId === 'z' ? Promise.reject(new Error('z is full')) : honest.runner(s, input, c));
    const w = verifySpans(failing, { sample: 1, random: () => 0, copies: copiesOf([whole('x')]), thirdNodes: () => ['z'], quarantine: () => {}, onVerdict: (k) => verdicts.push(k) });
    await expect(w.runner(stage('a'), 7, context(0))).rejects.toMatchObject({ code: 'Disputed', message: expect.stringContaining('(z) failed') });
    expect(verdicts).toEqual(['disputed']);
  });

  it('settles two copies with a third node re-running the span alone: the liar quarantined, its lie never goes on', async () => {
    const r = await run('a', [whole('x')], (id, sessionId, step) => id === 'a' && sessionId === 's' && step === 1, 3, { thirdNodes: () => ['z'] });
    expect(r.verdicts.map((v) => v[0])).toEqual(['agreed', 'quarantined', 'agreed']);
    expect(r.quarantined).toEqual(['a']);
    expect(r.outputs).toEqual(reference(3));
    expect(r.calls.filter((c) => c.nodeId === 'z').map((c) => c.layers)).toEqual([[0, 8]]);
  });

  it('two liars that agree cannot get an established honest node quarantined: it outweighs them and they are', async () => {
    const liars = (id: string) => id === 'x' || id === 'y';
    const standing = new SpanStanding();
    for (let i = 0; i < 7; i++) standing.agreed(['a']); // weight 8 = 4 × (1 + 1)
    // The honest node checked: a liar checks it, the other liar is the third party.
    const checked = await run('a', [whole('x'), whole('y')], liars, 3, { standing });
    expect(checked.quarantined).toEqual(['x', 'y']);
    expect(checked.outputs).toEqual(reference(3));
    // A liar checked: the established node checks it (drawn among the heaviest), the other liar votes with it and loses.
    const standing2 = new SpanStanding();
    for (let i = 0; i < 7; i++) standing2.agreed(['a']);
    const lying = await run('x', [whole('a'), whole('y')], liars, 1, { standing: standing2 });
    expect(lying.calls.filter((c) => c.sessionId === 's~v1').map((c) => c.nodeId)).toEqual(['a']);
    expect(lying.quarantined).toEqual(['x', 'y']);
    expect(lying.outputs).toEqual(reference(1));
    // Without standing (all fresh) two still outvote one: the limit standing cannot lift.
    const fresh = await run('a', [whole('x'), whole('y')], liars, 1);
    expect(fresh.quarantined).toEqual(['a']);
  });

  it('settles two liars\' calls at once one after the other: the second sees the first\'s quarantines (no Disputed)', async () => {
    const liars = (id: string) => id === 'x' || id === 'y';
    const standing = new SpanStanding();
    for (let i = 0; i < 7; i++) standing.agreed(['a']);
    const { runner } = nodes(liars);
    const verdicts: SpanVerdict[] = [];
    const quarantined: string[] = [];
    // Quarantining takes a while (the swarm's answer): the second call's disagreement arrives meanwhile.
    const quarantine = async (id: string): Promise<void> => {
      quarantined.push(id);
      await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const v = verifySpans(runner, { sample: 1, random: () => 0, copies: copiesOf([whole('a'), whole('x'), whole('y')]), quarantine, standing, onVerdict: (k) => verdicts.push(k) });
    const on = (nodeId: string, sessionId: string): SessionStage => ({ ...stage(nodeId), sessionId });
    const first = v.runner(on('x', 's1'), 7, context(0));
    await new Promise((resolve) => setTimeout(resolve, 5)); // x's disagreement settled, x being quarantined
    const second = v.runner(on('y', 's2'), 7, context(0));
    const outcomes = await Promise.allSettled([first, second]);
    expect(outcomes).toEqual([{ status: 'fulfilled', value: reference(1)[0] }, { status: 'fulfilled', value: reference(1)[0] }]);
    expect(quarantined).toEqual(['x', 'y']);
    expect(verdicts).toEqual(['quarantined', 'quarantined']);
  });

  it('verifies every call of a node on probation, sampled or not, until enough of its checks agreed', async () => {
    const { runner } = nodes(() => false);
    const standing = new SpanStanding();
    const v = verifySpans(runner, { sample: 0, random: uniform(3), copies: copiesOf([whole('x')]), quarantine: () => {}, standing, probation: 2 });
    for (let t = 0; t < 5; t++) await v.runner({ ...stage('a'), sessionId: `s${t}` }, t, context(0));
    expect(v.stats().verdicts.agreed).toBe(2);
    expect(standing.of('a')).toEqual({ agreed: 2, disagreed: 0 });
    expect(() => verifySpans(runner, { sample: 0, random: uniform(3), copies: copiesOf([]), quarantine: () => {}, probation: -1 })).toThrow(/option "probation"/);
  });

  it('skips a call it cannot check: no copy, or no history of the earlier steps at that layer', async () => {
    const none = await run('a', [], () => false, 1);
    expect(none.verdicts).toEqual([['skipped', undefined]]);
    const { runner } = nodes(() => false);
    const verdicts: SpanVerdict[] = [];
    const v = verifySpans(runner, { sample: 1, random: () => 0, copies: copiesOf([whole('x')]), quarantine: () => {}, onVerdict: (k) => verdicts.push(k) });
    await v.runner(stage('a'), 7, context(3)); // steps 0–2 never went through it
    expect(verdicts).toEqual(['skipped']);
  });

  it('verifies the sampled share only', async () => {
    const { runner } = nodes(() => false);
    const v = verifySpans(runner, { sample: 0.1, random: uniform(5), copies: copiesOf([whole('x')]), quarantine: () => {} });
    for (let t = 0; t < 1000; t++) await v.runner({ ...stage('a'), sessionId: `s${t}` }, t, context(0));
    expect(v.stats().extraCalls).toBeGreaterThan(60);
    expect(v.stats().extraCalls).toBeLessThan(140);
  });

  it('keeps inputs after layer 0 for checks within historyBytes: past it they are dropped and a sampled call there is skipped, layer 0 kept', async () => {
    const { runner } = nodes(() => false);
    const verdicts: [number, SpanVerdict][] = [];
    let layer = 0;
    const v = verifySpans(runner, { sample: 1, random: () => 0, copies: copiesOf([whole('x')]), quarantine: () => {}, historyBytes: { max: 8, sizeOf: () => 4 }, onVerdict: (k) => verdicts.push([layer, k]) });
    let x = 7;
    for (let t = 0; t < 4; t++) {
      layer = 0;
      x = await v.runner(stage('a', 0, 4), x, context(t));
      layer = 4;
      x = await v.runner(stage('b', 4, 8), x, context(t));
    }
    // Layer 4 keeps two inputs of 4 bytes; the third passes the bound: its checks are skipped from then on.
    expect(verdicts).toEqual([[0, 'agreed'], [4, 'agreed'], [0, 'agreed'], [4, 'agreed'], [0, 'agreed'], [4, 'skipped'], [0, 'agreed'], [4, 'skipped']]);
    expect(() => verifySpans(runner, { sample: 1, random: () => 0, copies: copiesOf([]), quarantine: () => {}, historyBytes: { max: -1, sizeOf: () => 1 } })).toThrow(/option "historyBytes"/);
  });

  it('never lets an output a check disagreed with go on: one liar among any copies and third nodes, every call verified', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(['x'], ['x', 'y'], ['split'], ['split', 'y']), fc.constantFrom('a', 'x', 'p', 'q'), fc.integer({ min: 0, max: 2 ** 31 }), fc.integer({ min: 1, max: 5 }), async (names, liar, seed, steps) => {
        const chains = names.map((n) => (n === 'split' ? split : whole(n)));
        const lies = (id: string, sessionId: string, step: number) => id === liar && ((hashOf(sessionId) + step + seed) & 1) === 1;
        const { runner } = nodes(lies);
        const quarantined: string[] = [];
        const v = verifySpans(runner, { sample: 1, random: uniform(seed), copies: copiesOf(chains), thirdNodes: (_m, _s, _e, exclude) => ['z', 'w'].filter((n) => !exclude.has(n)), quarantine: (id) => quarantined.push(id) });
        let x = 7;
        const want = reference(steps);
        for (let t = 0; t < steps && !quarantined.includes('a'); t++) {
          try {
            x = await v.runner(stage('a'), x, context(t));
          } catch (error) {
            expect(error).toMatchObject({ code: 'Disputed' });
            return;
          }
          expect(x).toBe(want[t]);
        }
        expect(quarantined.filter((id) => id !== liar)).toEqual([]);
      }),
      { seed: 41, numRuns: 60 },
    );
  });

  it('never quarantines anyone when every node is honest (any copies, any steps)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(['x'], ['x', 'y'], ['split', 'y'], ['split']), fc.integer({ min: 1, max: 6 }), async (names, steps) => {
        const chains = names.map((n) => (n === 'split' ? split : whole(n)));
        const r = await run('a', chains, () => false, steps);
        expect(r.quarantined).toEqual([]);
        expect(r.outputs).toEqual(reference(steps));
      }),
      { seed: 26, numRuns: 40 },
    );
  });
});
