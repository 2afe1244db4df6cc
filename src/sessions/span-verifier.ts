/**
 * Verification by redundant execution (docs/security.md, "Verification"): a stage runner that,
 * on a sampled share of its calls, runs the same span again on another copy and compares the
 * outputs. A disagreement is settled by a third copy; the node the majority outvotes is
 * quarantined. Works over the runner contract, so any session can use it.
 */
import type { SessionStage, StageContext, StageRunner } from './session-types.js';
import { checkSpanVerifierArguments } from './span-verifier-options.js';

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
  /** No majority (three outputs), no third copy, or an outvoted chain whose wrong hop no re-run shows: nobody is blamed. */
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
   * The other copies of `[layerStart, layerEnd)` of `modelId`, each a chain of hops covering the
   * span in order, none on a node of `exclude` (the nodes this runner quarantined among them):
   * the check runs on one drawn at random, a tie-break on the first of the rest (put the
   * cheapest first).
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
  /**
   * A bound in bytes, per session, on the inputs it keeps at layers after 0 (the activations
   * between stages, as a session's own `historyBytes`), with the size of one. Past it those are
   * dropped and a call sampled there is `skipped`; the inputs at layer 0 are always kept. @defaultValue none
   */
  readonly historyBytes?: { readonly max: number; readonly sizeOf: (input: T) => number };
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
 * span on another copy drawn at random, fresh, with the inputs this runner saw at the span's first
 * layer on earlier steps as its replay, under its own session id (`<id>~v<n>`). Same output:
 * agreed. Different: a third copy decides; the node outvoted two to one is quarantined and the
 * call returns the majority's output. An outvoted copy that ran on several nodes is narrowed
 * down: each hop re-run on what it was given by a one-node copy outside it; the first that
 * answers differently is quarantined. The runner remembers each session's inputs per first
 * layer and step: use one per session, or one for sessions that end.
 * @throws {SessionError} `InvalidInput` naming a bad argument or option key.
 * @example const v = verifySpans(runner, { sample: 0.02, random, copies, quarantine: (id) => swarm.quarantine(id) });
 */
export function verifySpans<T>(runner: StageRunner<T>, options: SpanVerifierOptions<T>): SpanVerifier<T> {
  checkSpanVerifierArguments(runner, options);
  const check = options.check ?? runner;
  const same = options.same ?? Object.is;
  const verdicts: Record<SpanVerdict, number> = { agreed: 0, quarantined: 0, inconclusive: 0, skipped: 0 };
  const quarantined: string[] = [];
  let calls = 0;
  let extraCalls = 0;
  let checks = 0;
  /** Inputs seen per session, first layer and step. */
  const seen = new Map<string, Map<number, Map<number, T>>>();
  /** Bytes kept per session at layers after 0; a session past `historyBytes.max` is in `truncated`. */
  const keptBytes = new Map<string, number>();
  const truncated = new Set<string>();

  /** Keeps `input` for later checks, unless its session's inputs after layer 0 passed their bound. */
  const keep = (sessionId: string, layer: number, step: number, input: T): void => {
    const bound = options.historyBytes;
    if (bound !== undefined && layer > 0) {
      if (truncated.has(sessionId)) return;
      const bytes = (keptBytes.get(sessionId) ?? 0) + bound.sizeOf(input);
      if (bytes > bound.max) {
        truncated.add(sessionId);
        keptBytes.delete(sessionId);
        for (const l of [...(seen.get(sessionId)?.keys() ?? [])]) if (l > 0) seen.get(sessionId)?.delete(l);
        return;
      }
      keptBytes.set(sessionId, bytes);
    }
    let layers = seen.get(sessionId);
    if (layers === undefined) seen.set(sessionId, (layers = new Map()));
    let steps = layers.get(layer);
    if (steps === undefined) layers.set(layer, (steps = new Map()));
    steps.set(step, input);
  };

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

  /** One hop as run in a copy: what it was given and what it answered. */
  interface HopRun {
    readonly hop: SpanHop;
    readonly input: T;
    readonly replay: readonly T[];
    readonly output: T;
  }

  /** Runs a chain of hops on `input` with `replay`, hop after hop; each hop's run, the last one's output being the copy's. */
  const runCopy = async (stage: SessionStage, chain: readonly SpanHop[], input: T, replay: readonly T[], context: StageContext<T>): Promise<HopRun[]> => {
    const sessionId = `${stage.sessionId}~v${++checks}`;
    const runs: HopRun[] = [];
    let x = input;
    let r = replay;
    for (const hop of chain) {
      let outs: readonly T[] = [];
      extraCalls++;
      const y = await check({ nodeId: hop.nodeId, modelId: stage.modelId, layerStart: hop.layerStart, layerEnd: hop.layerEnd, stageIndex: -1, sessionId }, x, {
        signal: context.signal,
        replay: r,
        fresh: true,
        step: context.step,
        replayed: (o) => (outs = o),
      });
      runs.push({ hop, input: x, replay: r, output: y });
      x = y;
      r = outs;
    }
    return runs;
  };

  const outputOf = (runs: readonly HopRun[]): T => (runs.at(-1) as HopRun).output;

  /**
   * Which hop of an outvoted chain answered wrong: each hop re-run, on what it was given, by a
   * one-node copy outside the chain; the first whose answer differs is the one. Undefined when
   * none differs or a hop has no such copy.
   */
  const culprit = async (stage: SessionStage, runs: readonly HopRun[], context: StageContext<T>): Promise<string | undefined> => {
    const chainNodes = new Set([...quarantined, ...runs.map((h) => h.hop.nodeId)]);
    for (const run of runs) {
      const other = options.copies(stage.modelId, run.hop.layerStart, run.hop.layerEnd, chainNodes).find((c) => c.length === 1);
      if (other === undefined) return undefined;
      const again = await runCopy(stage, other, run.input, run.replay, context);
      if (!same(outputOf(again), run.output)) return run.hop.nodeId;
    }
    return undefined;
  };

  const verdict = (kind: SpanVerdict, stage: SessionStage, blamed?: string): void => {
    verdicts[kind]++;
    options.onVerdict?.(kind, stage, blamed);
  };

  const blame = async (nodeId: string, stage: SessionStage): Promise<void> => {
    if (!quarantined.includes(nodeId)) quarantined.push(nodeId);
    verdict('quarantined', stage, nodeId);
    try {
      await options.quarantine(nodeId);
    } catch {
      // Already gone, or the swarm refused: the verdict stands in the counters.
    }
  };

  const verify = async (stage: SessionStage, input: T, output: T, context: StageContext<T>): Promise<T> => {
    const replay = history(stage.sessionId, stage.layerStart, context.step);
    // Any copy, drawn: every copy takes its turn checking, so a node seldom routed to is checked too (as a checker).
    const copies = replay === undefined ? [] : options.copies(stage.modelId, stage.layerStart, stage.layerEnd, new Set([stage.nodeId, ...quarantined]));
    const first = copies[Math.min(Math.floor(options.random() * copies.length), copies.length - 1)];
    if (replay === undefined || first === undefined) return (verdict('skipped', stage), output);
    let a: HopRun[];
    try {
      a = await runCopy(stage, first, input, replay, context);
    } catch {
      return (verdict('skipped', stage), output);
    }
    if (same(outputOf(a), output)) return (verdict('agreed', stage), output);
    try {
      const second = options.copies(stage.modelId, stage.layerStart, stage.layerEnd, new Set([stage.nodeId, ...quarantined, ...first.map((h) => h.nodeId)]))[0];
      const b = second === undefined ? undefined : outputOf(await runCopy(stage, second, input, replay, context));
      if (b !== undefined && same(b, outputOf(a))) {
        await blame(stage.nodeId, stage);
        return outputOf(a); // the majority's output goes on
      }
      // The copy is outvoted: its one node, or the hop of its chain a re-run says answered wrong.
      const wrong = b !== undefined && same(b, output) ? (a.length === 1 ? a[0]?.hop.nodeId : await culprit(stage, a, context)) : undefined;
      if (wrong !== undefined) await blame(wrong, stage);
      else verdict('inconclusive', stage);
    } catch {
      verdict('inconclusive', stage);
    }
    return output;
  };

  const wrapped: StageRunner<T> = async (stage, input, context) => {
    calls++;
    const output = await runner(stage, input, context);
    keep(stage.sessionId, stage.layerStart, context.step, input);
    if (!(options.sample > 0 && options.random() < options.sample)) return output;
    return verify(stage, input, output, context);
  };

  return {
    runner: wrapped,
    stats: () => ({ calls, extraCalls, verdicts: { ...verdicts }, quarantined: [...quarantined] }),
  };
}
