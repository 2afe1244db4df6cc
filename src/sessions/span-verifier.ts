/**
 * Verification by redundant execution (docs/security.md, "Verification"): a stage runner that,
 * on a sampled share of its calls, runs the same span again on another copy and compares the
 * outputs. A disagreement is settled by a third copy; the node the majority outvotes is
 * quarantined. Works over the runner contract, so any session can use it.
 */
import type { SessionStage, StageContext, StageRunner } from './session-types.js';

/** One hop of another copy of a span: a node and the layers it runs of it. */
export interface SpanHop {
  readonly nodeId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
}

/** What a verification ended in. */
export type SpanVerdict =
  /** The copy gave the same output. */
  | 'agreed'
  /** Two of three disagreed with one: that node is quarantined. */
  | 'quarantined'
  /** No majority (three outputs, or the outvoted copy ran on several nodes), or no third copy: nobody is blamed. */
  | 'inconclusive'
  /** Sampled, but no other copy could run the span (none alive, no history, a check call failed). */
  | 'skipped';

/** Options of {@link verifySpans}. */
export interface SpanVerifierOptions<T> {
  /** The share of calls verified, in [0, 1]. */
  readonly sample: number;
  /** Uniform in [0, 1): draws which calls are verified (seed it for a reproducible run). */
  readonly random: () => number;
  /**
   * The other copies of `[layerStart, layerEnd)` of `modelId`, cheapest first, each a chain of
   * hops covering the span in order, none on a node of `exclude`.
   */
  copies(modelId: string, layerStart: number, layerEnd: number, exclude: ReadonlySet<string>): readonly (readonly SpanHop[])[];
  /** Quarantines a node the majority outvoted (`swarm.quarantine`). */
  quarantine(nodeId: string): unknown;
  /** Runs the check calls. @defaultValue the runner verified */
  readonly check?: StageRunner<T>;
  /** Whether two outputs agree. @defaultValue `Object.is` */
  readonly same?: (a: T, b: T) => boolean;
  /** Told each verification's verdict. */
  readonly onVerdict?: (verdict: SpanVerdict, stage: SessionStage, blamed: string | undefined) => void;
}

/** Counters of a verifying runner: `extraCalls ÷ calls` is its extra compute in calls. */
export interface SpanVerifierStats {
  /** Calls of the runner verified (the session's own). */
  readonly calls: number;
  /** Check calls made on other copies. */
  readonly extraCalls: number;
  /** Verdicts by kind. */
  readonly verdicts: Readonly<Record<SpanVerdict, number>>;
  /** Nodes quarantined, in order. */
  readonly quarantined: readonly string[];
}

/** A verifying runner and its counters. */
export interface SpanVerifier<T> {
  readonly runner: StageRunner<T>;
  stats(): SpanVerifierStats;
}

/**
 * Wraps `runner`: each call runs as before; a sampled one (share `options.sample`) also runs its
 * span on the cheapest other copy, fresh, with the inputs this runner saw at the span's first
 * layer on earlier steps as its replay, under its own session id (`<id>~v<n>`). Same output:
 * agreed. Different: a third copy decides; the node outvoted two to one is quarantined and the
 * call returns the majority's output. The runner remembers each session's inputs per first
 * layer and step: use one per session, or one for sessions that end.
 * @example const v = verifySpans(runner, { sample: 0.02, random, copies, quarantine: (id) => swarm.quarantine(id) });
 */
export function verifySpans<T>(runner: StageRunner<T>, options: SpanVerifierOptions<T>): SpanVerifier<T> {
  const check = options.check ?? runner;
  const same = options.same ?? Object.is;
  const verdicts: Record<SpanVerdict, number> = { agreed: 0, quarantined: 0, inconclusive: 0, skipped: 0 };
  const quarantined: string[] = [];
  let calls = 0;
  let extraCalls = 0;
  let checks = 0;
  /** Inputs seen per session, first layer and step. */
  const seen = new Map<string, Map<number, Map<number, T>>>();

  /** The inputs at `layer` of steps before `step`, or undefined if one is missing. */
  const history = (sessionId: string, layer: number, step: number): T[] | undefined => {
    const bySteps = seen.get(sessionId)?.get(layer);
    const out: T[] = [];
    for (let s = 0; s < step; s++) {
      if (bySteps?.has(s) !== true) return undefined;
      out.push(bySteps.get(s) as T);
    }
    return out;
  };

  /** Runs a chain of hops on `input` with `replay`, hop after hop; the chain's output. */
  const runCopy = async (stage: SessionStage, chain: readonly SpanHop[], input: T, replay: readonly T[], context: StageContext<T>): Promise<T> => {
    const sessionId = `${stage.sessionId}~v${++checks}`;
    let x = input;
    let r = replay;
    for (const hop of chain) {
      let outs: readonly T[] = [];
      extraCalls++;
      x = await check({ nodeId: hop.nodeId, modelId: stage.modelId, layerStart: hop.layerStart, layerEnd: hop.layerEnd, stageIndex: -1, sessionId }, x, {
        signal: context.signal,
        replay: r,
        fresh: true,
        step: context.step,
        replayed: (o) => (outs = o),
      });
      r = outs;
    }
    return x;
  };

  const verdict = (kind: SpanVerdict, stage: SessionStage, blamed?: string): void => {
    verdicts[kind]++;
    options.onVerdict?.(kind, stage, blamed);
  };

  const blame = async (nodeId: string, stage: SessionStage): Promise<void> => {
    quarantined.push(nodeId);
    verdict('quarantined', stage, nodeId);
    try {
      await options.quarantine(nodeId);
    } catch {
      // Already gone, or the swarm refused: the verdict stands in the counters.
    }
  };

  const verify = async (stage: SessionStage, input: T, output: T, context: StageContext<T>): Promise<T> => {
    const replay = history(stage.sessionId, stage.layerStart, context.step);
    const first = replay === undefined ? undefined : options.copies(stage.modelId, stage.layerStart, stage.layerEnd, new Set([stage.nodeId]))[0];
    if (replay === undefined || first === undefined) return (verdict('skipped', stage), output);
    let a: T;
    try {
      a = await runCopy(stage, first, input, replay, context);
    } catch {
      return (verdict('skipped', stage), output);
    }
    if (same(a, output)) return (verdict('agreed', stage), output);
    const second = options.copies(stage.modelId, stage.layerStart, stage.layerEnd, new Set([stage.nodeId, ...first.map((h) => h.nodeId)]))[0];
    let b: T | undefined;
    try {
      b = second === undefined ? undefined : await runCopy(stage, second, input, replay, context);
    } catch {
      b = undefined;
    }
    if (b !== undefined && same(b, a)) {
      await blame(stage.nodeId, stage);
      return a; // the majority's output goes on
    }
    const lone = first.length === 1 ? first[0]?.nodeId : undefined;
    if (b !== undefined && same(b, output) && lone !== undefined) await blame(lone, stage);
    else verdict('inconclusive', stage);
    return output;
  };

  const wrapped: StageRunner<T> = async (stage, input, context) => {
    calls++;
    const output = await runner(stage, input, context);
    let layers = seen.get(stage.sessionId);
    if (layers === undefined) seen.set(stage.sessionId, (layers = new Map()));
    let steps = layers.get(stage.layerStart);
    if (steps === undefined) layers.set(stage.layerStart, (steps = new Map()));
    steps.set(context.step, input);
    if (!(options.sample > 0 && options.random() < options.sample)) return output;
    return verify(stage, input, output, context);
  };

  return {
    runner: wrapped,
    stats: () => ({ calls, extraCalls, verdicts: { ...verdicts }, quarantined: [...quarantined] }),
  };
}
