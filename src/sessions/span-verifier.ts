/**
 * Verification by redundant execution (docs/security.md, "Verification"): a stage runner that,
 * on a sampled share of its calls, runs the same span again on another copy and compares the
 * outputs. A disagreement is settled before the call returns: a third party — another copy, or a
 * third node re-running the span alone — votes, weighed by standing (span-standing.ts); the
 * loser is quarantined and the winner's output goes on. Unsettled, the call fails (`Disputed`):
 * no output a check disagreed with goes on. Works over the runner contract, so any session can use it.
 */
import { SessionError } from '../core/errors.js';
import type { SessionStage, StageContext, StageRunner } from './session-types.js';
import { checkSpanVerifierArguments } from './span-verifier-options.js';
import { OUTWEIGH, SpanStanding } from './span-standing.js';
import { NodeBusyError } from './node-busy.js';

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
  /** A disagreement settled by a third party's vote: the loser (one node, or the hop of a chain a re-run shows) is quarantined. */
  | 'quarantined'
  /** Settled, the winner's output went on, but the losing chain's wrong hop no re-run shows: nobody is blamed. */
  | 'inconclusive'
  /** A disagreement nobody could settle (no third party, three outputs, a tie, a failed call): the call failed with `Disputed`. */
  | 'disputed'
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
   * the check runs on one drawn at random among the heaviest by standing.
   */
  copies(modelId: string, layerStart: number, layerEnd: number, exclude: ReadonlySet<string>): readonly (readonly SpanHop[])[];
  /**
   * Nodes, none in `exclude`, that may re-run the span alone though no copy holds it so (a node
   * of the model's other layers): third parties of a dispute beside the other copies. @defaultValue none
   */
  readonly thirdNodes?: (modelId: string, layerStart: number, layerEnd: number, exclude: ReadonlySet<string>) => readonly string[];
  /** The nodes' records, shared by every verifier that should learn from the same checks (one per orchestrator). @defaultValue one of its own */
  readonly standing?: SpanStanding;
  /** A node with fewer agreed checks than this has every call verified, sampled or not. @defaultValue 0 */
  readonly probation?: number;
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
 * agreed. Different: a third party votes (another copy or a third node, drawn at random among the
 * heaviest by standing); two copies outvote one unless it outweighs them {@link OUTWEIGH} times
 * over; the loser is quarantined and the call returns the winner's output. A losing copy that ran
 * on several nodes is narrowed down: each hop re-run on what it was given by a one-node copy
 * outside it; the first that answers differently is quarantined. No third party, three outputs,
 * a tie or a failed call: the call rejects with `Disputed`. The runner remembers each session's
 * inputs per first layer and step: use one per session, or one for sessions that end.
 * @throws {SessionError} `InvalidInput` naming a bad argument or option key; the runner rejects
 * with `Disputed` for a disagreement nobody could settle.
 * @example const v = verifySpans(runner, { sample: 0.02, random, copies, quarantine: (id) => swarm.quarantine(id) });
 */
export function verifySpans<T>(runner: StageRunner<T>, options: SpanVerifierOptions<T>): SpanVerifier<T> {
  checkSpanVerifierArguments(runner, options);
  const check = options.check ?? runner;
  const same = options.same ?? Object.is;
  const standing = options.standing ?? new SpanStanding();
  const probation = options.probation ?? 0;
  const verdicts: Record<SpanVerdict, number> = { agreed: 0, quarantined: 0, inconclusive: 0, disputed: 0, skipped: 0 };
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
  const nodesOf = (copy: readonly SpanHop[]): string[] => copy.map((h) => h.nodeId);

  /** The copies of a span outside `exclude`, and the third nodes that may re-run it alone. */
  const parties = (stage: SessionStage, layerStart: number, layerEnd: number, exclude: ReadonlySet<string>): (readonly SpanHop[])[] => {
    const out = [...options.copies(stage.modelId, layerStart, layerEnd, exclude)];
    const alone = new Set(out.filter((c) => c.length === 1).map((c) => c[0]?.nodeId));
    for (const nodeId of options.thirdNodes?.(stage.modelId, layerStart, layerEnd, exclude) ?? []) {
      if (!exclude.has(nodeId) && !alone.has(nodeId)) (alone.add(nodeId), out.push([{ nodeId, layerStart, layerEnd }]));
    }
    return out;
  };

  /**
   * Which hop of a losing chain answered wrong: each hop re-run, on what it was given, by a
   * one-node party outside the chain; the first whose answer differs is the one. Undefined when
   * none differs or a hop has no such party.
   */
  const culprit = async (stage: SessionStage, runs: readonly HopRun[], context: StageContext<T>): Promise<string | undefined> => {
    const chainNodes = new Set([...quarantined, ...runs.map((h) => h.hop.nodeId)]);
    for (const run of runs) {
      const other = standing.draw(parties(stage, run.hop.layerStart, run.hop.layerEnd, chainNodes).filter((c) => c.length === 1), options.random);
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

  const blame = async (nodeId: string): Promise<void> => {
    if (!quarantined.includes(nodeId)) quarantined.push(nodeId);
    standing.disagreed(nodeId);
    try {
      await options.quarantine(nodeId);
    } catch {
      // Already gone, or the swarm refused: the verdict stands in the counters.
    }
  };

  /** A copy's side of a vote: its hops, its output, and its runs (none for the call verified). */
  interface Side {
    readonly copy: readonly SpanHop[];
    readonly output: T;
    readonly runs: readonly HopRun[] | undefined;
  }

  const disputed = (stage: SessionStage, why: string, cause?: unknown): SessionError => {
    verdict('disputed', stage);
    return new SessionError('Disputed', `stage call of session "${stage.sessionId}" on node "${stage.nodeId}" for layers [${stage.layerStart}, ${stage.layerEnd}) of "${stage.modelId}" disagreed with its check and ${why}: no output goes on`, [], cause === undefined ? undefined : { cause });
  };

  /**
   * Settles a disagreement between the call verified (`own`) and its check (`first`) before the
   * call returns: a third party's output decides which of the two has two copies behind it,
   * unless the lone one outweighs both {@link OUTWEIGH} times over. The loser is quarantined (a
   * chain narrowed to its hop); the winner's output is returned.
   * @throws {SessionError} `Disputed` when no third party can be drawn, it gives a third output or its call fails; the third party's error itself when the call was given up meanwhile (`context.signal`); a {@link NodeBusyError} when every third party drawn was at capacity.
   */
  const settleNow = async (stage: SessionStage, own: Side, first: Side, input: T, replay: readonly T[], context: StageContext<T>): Promise<T> => {
    // A side with a node quarantined meanwhile (by the disagreement settled before this one) has lost already.
    const lost = [own, first].filter((side) => nodesOf(side.copy).some((n) => quarantined.includes(n)));
    if (lost.length === 1) {
      verdict('quarantined', stage, nodesOf((lost[0] as Side).copy).find((n) => quarantined.includes(n)));
      return (lost[0] === own ? first : own).output;
    }
    const exclude = new Set([stage.nodeId, ...quarantined, ...nodesOf(first.copy)]);
    let third: readonly SpanHop[] | undefined;
    let runs: HopRun[] | undefined;
    let busy: NodeBusyError | undefined;
    while (runs === undefined) {
      third = standing.draw(parties(stage, stage.layerStart, stage.layerEnd, exclude), options.random);
      // Every third party at capacity: no verdict, the step retries later (docs/sessions.md, "A busy node").
      if (third === undefined) throw busy ?? disputed(stage, 'no third holder of the span could settle it');
      try {
        runs = await runCopy(stage, third, input, replay, context);
      } catch (error) {
        // The call itself was given up meanwhile (its node went down, its caller left): nothing to settle.
        if (context.signal.aborted) throw error;
        // A third party at capacity is no answer: another is drawn.
        if (error instanceof NodeBusyError) {
          busy = error;
          for (const n of nodesOf(third)) exclude.add(n);
          continue;
        }
        throw disputed(stage, `the third party's call (${nodesOf(third).join(' → ')}) failed`, error);
      }
    }
    if (third === undefined) throw disputed(stage, 'no third holder of the span could settle it');
    const t: Side = { copy: third, output: outputOf(runs), runs };
    const [two, one] = same(t.output, first.output) ? [[first, t], own] : same(t.output, own.output) ? [[own, t], first] : [undefined, undefined];
    if (two === undefined || one === undefined) throw disputed(stage, `the third party (${nodesOf(third).join(' → ')}) gave a third output`);
    const heavier = standing.copyWeight(one.copy) >= OUTWEIGH * two.reduce((w, s) => w + standing.copyWeight(s.copy), 0);
    const [winners, losers] = heavier ? [[one], two] : [two, [one]];
    const blamed: string[] = [];
    for (const side of losers) {
      const wrong = side.runs === undefined || side.runs.length === 1 ? side.copy[0]?.nodeId : await culprit(stage, side.runs, context).catch(() => undefined);
      if (wrong !== undefined) (blamed.push(wrong), await blame(wrong));
    }
    standing.agreed(winners.flatMap((side) => nodesOf(side.copy)));
    if (blamed.length > 0) verdict('quarantined', stage, blamed[0]);
    else verdict('inconclusive', stage);
    return (winners[0] as Side).output;
  };

  /** Span → the disagreement being settled on it: the next waits for it, and sees its quarantines (two liars' calls at once). */
  const settling = new Map<string, Promise<unknown>>();
  const settle = (stage: SessionStage, own: Side, first: Side, input: T, replay: readonly T[], context: StageContext<T>): Promise<T> => {
    const key = `${stage.modelId}/${stage.layerStart}/${stage.layerEnd}`;
    const mine = (settling.get(key) ?? Promise.resolve()).then(() => settleNow(stage, own, first, input, replay, context));
    const done = mine.catch(() => undefined);
    settling.set(key, done);
    void done.then(() => settling.get(key) === done && settling.delete(key));
    return mine;
  };

  const verify = async (stage: SessionStage, input: T, output: T, context: StageContext<T>): Promise<T> => {
    const replay = history(stage.sessionId, stage.layerStart, context.step);
    // Any copy among the heaviest, drawn: each takes its turn checking, so a node seldom routed to is checked too (as a checker).
    const copies = replay === undefined ? [] : options.copies(stage.modelId, stage.layerStart, stage.layerEnd, new Set([stage.nodeId, ...quarantined]));
    const first = standing.draw(copies, options.random);
    if (replay === undefined || first === undefined) return (verdict('skipped', stage), output);
    let a: HopRun[];
    try {
      a = await runCopy(stage, first, input, replay, context);
    } catch {
      return (verdict('skipped', stage), output);
    }
    if (same(outputOf(a), output)) {
      standing.agreed([stage.nodeId, ...nodesOf(first)]);
      return (verdict('agreed', stage), output);
    }
    const own: Side = { copy: [{ nodeId: stage.nodeId, layerStart: stage.layerStart, layerEnd: stage.layerEnd }], output, runs: undefined };
    return settle(stage, own, { copy: first, output: outputOf(a), runs: a }, input, replay, context);
  };

  const wrapped: StageRunner<T> = async (stage, input, context) => {
    calls++;
    const output = await runner(stage, input, context);
    keep(stage.sessionId, stage.layerStart, context.step, input);
    const drawn = options.sample > 0 && options.random() < options.sample;
    if (!drawn && !(standing.of(stage.nodeId).agreed < probation)) return output;
    return verify(stage, input, output, context);
  };

  return {
    runner: wrapped,
    stats: () => ({ calls, extraCalls, verdicts: { ...verdicts }, quarantined: [...quarantined] }),
  };
}
