/**
 * Serve's verification by redundant execution (docs/security.md, "Verification"): a share of a
 * generation's stage calls run again on another copy of their span — the plan's other pipelines,
 * hop by hop — and a disagreement is settled by a third party (another copy, or a node of the
 * model's other layers re-running the span), weighed by the orchestrator's standing of each
 * node; the loser is quarantined through the swarm's lifecycle command (`quarantine`: down with
 * cause `integrity`, the statechart's to write).
 */
import { uniform } from '../core/random.js';
import type { Swarm } from '../runtime/swarm.js';
import type { SessionStage, StageRunner } from '../sessions/session-types.js';
import { verifySpans, type SpanHop, type SpanVerdict } from '../sessions/span-verifier.js';
import { SpanStanding } from '../sessions/span-standing.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import { hashText } from '../wire/digest.js';

/**
 * The share of stage calls verified by default, 1 in 80: on the chaos topology about 1.7% extra
 * stage calls and 4.7% extra layer-tokens, a node lying on 10% of its calls quarantined within
 * about 300 generations (bench/verify-spans.ts; docs/security.md).
 */
export const DEFAULT_VERIFY_SAMPLE = 0.0125;

/** Orchestrator options of verification. */
export interface VerifyOptions {
  /** The share of stage calls run again on another copy, in [0, 1]; 0 turns verification off. @defaultValue {@link DEFAULT_VERIFY_SAMPLE} */
  readonly verifySample?: number;
  /** Seeds which calls are verified (with each session's id). @defaultValue 0 */
  readonly verifySeed?: number;
  /** A node (each time it joins) has every stage call verified until this many of its checks agreed. @defaultValue 0 */
  readonly verifyProbation?: number;
}

/** What a generation verifies with. */
export interface SpanChecks {
  readonly sample: number;
  readonly seed: number;
  /** Agreed checks below which every call of a node is verified. */
  readonly probation: number;
  /** The nodes' records, shared by every generation; a node's restarts when it joins again. */
  readonly standing: SpanStanding;
  /** Quarantines a node: the seated swarm's lifecycle command (through the log when replicated). */
  quarantine(nodeId: string): unknown;
  /** Told each verdict (the metrics). */
  verdict(kind: SpanVerdict, stage: SessionStage): void;
}

/** The orchestrator's {@link SpanChecks}, or undefined when verification is off. */
export function spanChecks(parts: OrchestratorParts, options: VerifyOptions): SpanChecks | undefined {
  const sample = options.verifySample ?? DEFAULT_VERIFY_SAMPLE;
  if (!(sample > 0)) return undefined;
  return {
    sample,
    seed: options.verifySeed ?? 0,
    probation: options.verifyProbation ?? 0,
    standing: new SpanStanding({ incarnation: (nodeId) => parts.registry.get(nodeId)?.joins }),
    quarantine: (nodeId) => parts.seat.require().quarantine(nodeId),
    verdict: (kind) => parts.metrics.verifications.inc({ verdict: kind }),
  };
}

/** A span of a model's layers: `[layerStart, layerEnd)` of `modelId`. */
export interface LayerSpan {
  readonly modelId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
}

/**
 * The other copies of `span` in `swarm`'s plan: for each other pipeline of the model, the hops of
 * its stages over the span, if every one is alive and none is excluded; fewest hops first.
 */
export function planCopies(swarm: Swarm, span: LayerSpan, exclude: ReadonlySet<string>): SpanHop[][] {
  const { modelId, layerStart, layerEnd } = span;
  const state = swarm.state();
  const out: SpanHop[][] = [];
  for (const p of state.plan.pipelines) {
    if (p.modelId !== modelId) continue;
    const hops: SpanHop[] = [];
    let at = layerStart;
    for (const s of p.stages) {
      if (s.layerEnd <= at || s.layerStart >= layerEnd) continue;
      if (s.layerStart > at || exclude.has(s.nodeId) || !Object.hasOwn(state.nodes, s.nodeId) || state.nodes[s.nodeId]?.alive !== true) break;
      const end = Math.min(s.layerEnd, layerEnd);
      hops.push({ nodeId: s.nodeId, layerStart: at, layerEnd: end });
      at = end;
    }
    if (at === layerEnd && hops.length > 0) out.push(hops);
  }
  return out.sort((a, b) => a.length - b.length);
}

/**
 * The alive nodes of `span.modelId`'s pipelines outside `exclude`: each can re-run the span alone
 * (an agent loads a span of its model when called for it), a third party where copies run short.
 */
export function planNodes(swarm: Swarm, span: LayerSpan, exclude: ReadonlySet<string>): string[] {
  const state = swarm.state();
  const out = new Set<string>();
  for (const p of state.plan.pipelines) {
    if (p.modelId !== span.modelId) continue;
    for (const s of p.stages) if (!exclude.has(s.nodeId) && Object.hasOwn(state.nodes, s.nodeId) && state.nodes[s.nodeId]?.alive === true) out.add(s.nodeId);
  }
  return [...out].sort();
}

/** Options of {@link verifiedRunner}: one generation's. */
export interface VerifiedRunnerOptions<T> {
  readonly swarm: Swarm;
  /** The session's own runner. */
  readonly runner: StageRunner<T>;
  /** Makes the runner of the check calls. */
  readonly check: () => StageRunner<T>;
  /** Without them, `runner` itself. */
  readonly checks: SpanChecks | undefined;
  /** Whether two outputs agree (a digest's value, a tensor's bytes). @defaultValue `Object.is` */
  readonly same?: (a: T, b: T) => boolean;
  /** The bound on the activations kept for checks, as the session's own history's (verifySpans' `historyBytes`). @defaultValue none */
  readonly historyBytes?: { readonly max: number; readonly sizeOf: (input: T) => number };
}

/**
 * `runner` verified as `checks` says, for one generation: which calls are verified is drawn from
 * the seed and the session's id. Check calls go through `check` (a runner of their own, so they
 * do not show in the reply's path). Without `checks`, `runner` itself.
 */
export function verifiedRunner<T>(options: VerifiedRunnerOptions<T>): StageRunner<T> {
  const { swarm, runner, check, checks } = options;
  if (checks === undefined) return runner;
  let sessionId = '';
  let draw: (() => number) | undefined;
  const verified = verifySpans(runner, {
    sample: checks.sample,
    random: () => (draw ??= uniform(hashText(sessionId, checks.seed)))(),
    copies: (modelId, layerStart, layerEnd, exclude) => planCopies(swarm, { modelId, layerStart, layerEnd }, exclude),
    thirdNodes: (modelId, layerStart, layerEnd, exclude) => planNodes(swarm, { modelId, layerStart, layerEnd }, exclude),
    standing: checks.standing,
    probation: checks.probation,
    quarantine: (id) => checks.quarantine(id),
    check: check(),
    ...(options.same !== undefined ? { same: options.same } : {}),
    ...(options.historyBytes !== undefined ? { historyBytes: options.historyBytes } : {}),
    onVerdict: (kind, stage) => checks.verdict(kind, stage),
  }).runner;
  return (stage, input, context) => {
    sessionId = stage.sessionId;
    return verified(stage, input, context);
  };
}
