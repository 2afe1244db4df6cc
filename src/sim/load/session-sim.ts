/**
 * W6, "kills mid-generation": long sessions (32–128 steps) on a 12-node swarm asking for two copies (a minimum: the planner may add more),
 * two nodes killed while they run, the same workload run three ways through the real runtime's
 * sessions: resume (keep the live stages, replay only the dead spans), resume with a suffix of an
 * intact copy preferred, and restart from scratch (what the original design does: route again and
 * rerun the whole generation). Outputs are checked against the reference model (digest-model.ts)
 * at every step. Virtual time; pure apart from the promise jobs it awaits.
 *
 * Timing. A decode step of one input through `n` layers on a node of score `s` takes
 * `n · msPerLayer / s`, plus one hop. A replay of `k` earlier inputs is one batch run before the
 * current input, like a prefill: every input is known, so the node runs them together, reading
 * its weights once; a decode step is bound by reading the weights, not by arithmetic, so a batch
 * of `k` costs `k / PREFILL_INPUTS_PER_STEP` steps more, not `k` steps. Restart's replay of the
 * whole history through every layer is timed the same way, so neither side is favoured.
 * Nodes serve sessions in parallel (batched decoding): no queueing is modelled.
 */
import { RoutingError, SessionError } from '../../core/errors.js';
import type { ModelSpec, NodeProfile, Route } from '../../core/types.js';
import { createSessionSwarm } from '../../sessions/session-swarm.js';
import type { SessionOptions, StageContext, SessionStage } from '../../sessions/session-types.js';
import { DigestNodes, DigestReference, mix } from '../../core/digest-model.js';
import { quantile } from './metrics.js';
import { createRng, deriveSeed } from './rng.js';
import { median, round } from './run.js';
import { checkSessionSimOptions, checkSessionSimResult } from './session-sim-input.js';
import { VirtualTimers } from './virtual-timers.js';

/** The id of the workload (`--workload w6`). */
export const W6_ID = 'w6-kills';

/** Inputs a replay batch adds per extra step's worth of time (see the module comment). */
export const PREFILL_INPUTS_PER_STEP = 16;

/** The swarm of W6: twelve machines of mixed speed, one 24-layer model in exactly two copies (`furtherCopies: false`); the nodes the copies do not need wait as spares for splices. */
export const W6_TOPOLOGY: { readonly nodes: readonly NodeProfile[]; readonly model: ModelSpec; readonly msPerLayer: number; readonly hopMs: number } = Object.freeze({
  nodes: [6, 4, 3, 2.5, 2, 1.5, 5, 4, 3, 2, 2, 1.5].map((score, i) => ({ id: `n${String(i + 1).padStart(2, '0')}`, memoryGb: 12, score })),
  model: { id: 'gen-24', layers: 24, pipelines: 2 },
  msPerLayer: 2,
  hopMs: 1,
});

/** How the sessions handle a failure. */
export type W6Strategy = 'resume' | 'resume-suffix' | 'restart';

/** Every strategy, in report order. */
export const W6_STRATEGIES: readonly W6Strategy[] = ['resume', 'resume-suffix', 'restart'];

/** What to simulate. */
export interface SessionSimOptions {
  /** @defaultValue 1 */
  readonly seed?: number;
  /** @defaultValue 10 */
  readonly seeds?: number;
  /** Sessions per run. @defaultValue 48 */
  readonly sessions?: number;
  /** Delay from a node's death to the swarm's `markDown` (a detector's delay). @defaultValue 300 */
  readonly detectMs?: number;
  readonly onProgress?: (done: number, total: number, label: string) => void;
}

/** One strategy's figures on one seed (or their medians). */
export interface W6Figures {
  readonly sessions: number;
  readonly completed: number;
  /** Completed sessions whose every step equalled the reference. */
  readonly correct: number;
  readonly lost: number;
  /** Lost although every layer had a live holder when it failed. */
  readonly lostWithCover: number;
  /** Times a session re-routed after a failed stage. */
  readonly failures: number;
  /** Layer-steps a run without failure needs: Σ steps × layers. */
  readonly freshLayerSteps: number;
  /** Layer-steps sent as replay (earlier inputs rebuilt on a replacement). */
  readonly replayLayerSteps: number;
  /** Layer-steps of the current step run a second time (restart reruns the stages before the failure). */
  readonly rerunLayerSteps: number;
  /** replay + rerun: all the work recomputed because of the failures. */
  readonly recomputeLayerSteps: number;
  /** Layer-steps lost on nodes that died while running them. */
  readonly lostLayerSteps: number;
  /** Time spent in replay batches, summed over calls, ms. */
  readonly replayMs: number;
  /**
   * Worst, over the failures, of recompute ÷ (steps so far × layers) ÷ (failed span's layers ÷
   * layers): at most 1 when a failure recomputes no more than its span's share of what restart does.
   */
  readonly worstFailureRatio: number;
  /** Session time (open → close), ms. */
  readonly p50: number;
  readonly p99: number;
  /** p99 over the sessions a failure hit. */
  readonly affectedP99: number;
}

/** The results of W6. */
export interface SessionSimResult {
  readonly workload: 'w6-kills';
  readonly label: string;
  readonly seeds: readonly number[];
  readonly sessionsPerRun: number;
  readonly detectMs: number;
  readonly prefillInputsPerStep: number;
  readonly topology: { readonly msPerLayer: number; readonly hopMs: number; readonly pipelines: readonly { readonly id: string; readonly stages: readonly string[] }[] };
  /** Medians over the seeds, per strategy. */
  readonly strategies: readonly {
    readonly strategy: W6Strategy;
    readonly median: W6Figures;
    /** p99 session time over every session of every seed, ms: the tail of W6 as a whole. */
    readonly pooledP99: number;
    readonly runs: readonly W6Figures[];
  }[];
  readonly targets: readonly { readonly target: string; readonly value: number; readonly limit: number; readonly pass: boolean }[];
}

interface SessionPlan {
  readonly at: number;
  readonly steps: number;
  readonly first: number;
}

interface W6Workload {
  readonly sessions: readonly SessionPlan[];
  readonly kills: readonly { readonly at: number; readonly node: string }[];
}

/** The sessions and kills of one seed: the same for every strategy. */
function workload(seed: number, count: number): W6Workload {
  const rng = createRng(deriveSeed(seed, 'w6'));
  const spanMs = 8000;
  const sessions = Array.from({ length: count }, () => ({ at: rng.next() * spanMs, steps: 32 + rng.int(97), first: rng.int(2 ** 31) })).sort((a, b) => a.at - b.at);
  const ids = W6_TOPOLOGY.nodes.map((n) => n.id);
  const first = ids[rng.int(ids.length)] as string;
  const rest = ids.filter((id) => id !== first);
  const second = rest[rng.int(rest.length)] as string;
  return { sessions, kills: [{ at: spanMs * (0.35 + 0.1 * rng.next()), node: first }, { at: spanMs * (0.65 + 0.1 * rng.next()), node: second }] };
}

/** Runs one seed under one strategy. */
async function runOne(w: W6Workload, strategy: W6Strategy, seed: number, detectMs: number): Promise<{ figures: W6Figures; times: number[] }> {
  const timers = new VirtualTimers();
  const { model, msPerLayer, hopMs } = W6_TOPOLOGY;
  const swarm = createSessionSwarm(W6_TOPOLOGY.nodes, { models: [model], leaseTtlMs: 60_000, furtherCopies: false }, { clock: timers, seed });
  const score = new Map(W6_TOPOLOGY.nodes.map((n) => [n.id, n.score ?? 1]));
  const nodes = new DigestNodes();
  const dead = new Set<string>();
  const epoch = new Map<string, number>();
  let replayLayerSteps = 0;
  let lostLayerSteps = 0;
  /** Per session: layer-steps its successful calls ran on current inputs, and replayed. */
  const work = new Map<string, { called: number; replay: number }>();
  let replayMs = 0;

  const runStage = (stage: SessionStage, input: number, ctx: StageContext<number>): Promise<number> => {
    const layers = stage.layerEnd - stage.layerStart;
    const k = ctx.replay.length;
    if (dead.has(stage.nodeId)) return new Promise<number>(() => {}); // a black hole
    const stepMs = (layers * msPerLayer) / (score.get(stage.nodeId) ?? 1);
    const batchMs = (stepMs * k) / PREFILL_INPUTS_PER_STEP;
    const born = epoch.get(stage.nodeId) ?? 0;
    return new Promise<number>((resolve, reject) => {
      timers.setTimeout(() => {
        if ((epoch.get(stage.nodeId) ?? 0) !== born) {
          lostLayerSteps += layers * (1 + k); // died while running it
          return;
        }
        // A call the session gave up on still runs on a live node; the session never uses that node again.
        try {
          const { output, replayOutputs } = nodes.run(stage.nodeId, stage.sessionId, stage.layerStart, stage.layerEnd, input, ctx.replay, ctx.fresh);
          if (k > 0) ctx.replayed(replayOutputs);
          const mine = work.get(stage.sessionId) ?? { called: 0, replay: 0 };
          mine.called += layers;
          mine.replay += layers * k;
          work.set(stage.sessionId, mine);
          replayLayerSteps += layers * k;
          replayMs += batchMs;
          resolve(output);
        } catch (error) {
          reject(error);
        }
      }, hopMs + stepMs + batchMs);
    });
  };

  for (const kill of w.kills) {
    timers.setTimeout(() => {
      dead.add(kill.node);
      epoch.set(kill.node, (epoch.get(kill.node) ?? 0) + 1);
      nodes.lose(kill.node);
      timers.setTimeout(() => swarm.markDown(kill.node), detectMs);
    }, kill.at);
  }

  const options: SessionOptions = {
    onFailure: strategy === 'restart' ? 'restart' : 'resume',
    prefer: strategy === 'resume-suffix' ? 'suffix' : 'keep',
    stageTimeoutMs: 1000,
  };
  const L = model.layers;
  const times: number[] = [];
  const affected: number[] = [];
  let completed = 0;
  let correct = 0;
  let lost = 0;
  let lostWithCover = 0;
  let failures = 0;
  let fresh = 0;
  let worst = 0;
  const coverExists = () => {
    const state = swarm.state();
    for (let layer = 0; layer < L; layer++) {
      if (!state.plan.pipelines.some((p) => p.stages.some((s) => s.layerStart <= layer && layer < s.layerEnd && !dead.has(s.nodeId)))) return false;
    }
    return true;
  };

  let rerun = 0;
  const drive = async (plan: SessionPlan): Promise<void> => {
    const opened = timers.now();
    let session;
    try {
      session = swarm.session({}, runStage, options);
    } catch (error) {
      if (!(error instanceof RoutingError || error instanceof SessionError)) throw error;
      lost++;
      if (coverExists()) lostWithCover++;
      return;
    }
    const ref = new DigestReference(L);
    const mine = () => work.get(session.id) ?? { called: 0, replay: 0 };
    let x = plan.first;
    let ok = true;
    let hit = false;
    let rerunHere = 0;
    try {
      for (let t = 0; t < plan.steps; t++) {
        const before: Route = session.route;
        const resumesBefore = session.stats().resumes;
        const { called: calledBefore, replay: replayBefore } = mine();
        const expected = ref.step(x);
        const y = await session.step(x);
        if (y !== expected) ok = false;
        const resumes = session.stats().resumes - resumesBefore;
        if (resumes > 0) {
          hit = true;
          failures += resumes;
          // What this step recomputed, against what restart recomputes for it: the whole history.
          const again = Math.max(mine().called - calledBefore - L, 0);
          rerunHere += again;
          const recompute = mine().replay - replayBefore + again;
          const failedLayers = before.stages.filter((s) => dead.has(s.nodeId)).reduce((n, s) => n + s.layerEnd - s.layerStart, 0);
          if (t > 0 && failedLayers > 0) worst = Math.max(worst, recompute / (t * L) / (failedLayers / L));
        }
        x = mix(y, t + 1);
      }
      session.close();
      completed++;
      if (ok) correct++;
      fresh += plan.steps * L;
      rerun += rerunHere;
      const took = timers.now() - opened;
      times.push(took);
      if (hit) affected.push(took);
    } catch (error) {
      if (!(error instanceof SessionError)) throw error;
      lost++;
      if (coverExists()) lostWithCover++;
    } finally {
      nodes.forget(session.id);
    }
  };

  const running: Promise<void>[] = [];
  for (const plan of w.sessions) timers.setTimeout(() => void running.push(drive(plan)), plan.at);
  await timers.run();
  await Promise.all(running);
  swarm.stop();
  const q = (list: number[], p: number) => quantile(Float64Array.from(list).sort(), p);
  const figures: W6Figures = {
    sessions: w.sessions.length,
    completed,
    correct,
    lost,
    lostWithCover,
    failures,
    freshLayerSteps: fresh,
    replayLayerSteps,
    rerunLayerSteps: rerun,
    recomputeLayerSteps: replayLayerSteps + rerun,
    lostLayerSteps,
    replayMs: round(replayMs, 1),
    worstFailureRatio: round(worst, 4),
    p50: round(q(times, 0.5), 1),
    p99: round(q(times, 0.99), 1),
    affectedP99: round(q(affected, 0.99), 1),
  };
  return { figures, times };
}

/**
 * Runs W6 over the seeds, every strategy on the same workload per seed.
 * @throws {InputError} naming a bad option, or seeds × sessions over `LOAD_SIM_LIMITS.sessionWork` (docs/inputs.md).
 * @example const result = await runSessionSim({ seeds: 3 });
 */
export async function runSessionSim(options: SessionSimOptions = {}): Promise<SessionSimResult> {
  checkSessionSimOptions(options);
  const first = options.seed ?? 1;
  const seeds = Array.from({ length: options.seeds ?? 10 }, (_, i) => first + i);
  const count = options.sessions ?? 48;
  const detectMs = options.detectMs ?? 300;
  const runs = new Map<W6Strategy, W6Figures[]>(W6_STRATEGIES.map((s) => [s, []]));
  const pooled = new Map<W6Strategy, number[]>(W6_STRATEGIES.map((s) => [s, []]));
  const total = seeds.length * W6_STRATEGIES.length;
  let done = 0;
  for (const seed of seeds) {
    const w = workload(seed, count);
    for (const strategy of W6_STRATEGIES) {
      const { figures, times } = await runOne(w, strategy, seed, detectMs);
      runs.get(strategy)?.push(figures);
      pooled.get(strategy)?.push(...times);
      options.onProgress?.(++done, total, `w6-kills ${strategy} seed ${seed}`);
    }
  }
  const strategies = W6_STRATEGIES.map((strategy) => {
    const list = runs.get(strategy) ?? [];
    const all = Float64Array.from(pooled.get(strategy) ?? []).sort();
    return { strategy, median: medianFigures(list), pooledP99: round(quantile(all, 0.99), 1), runs: list };
  });
  const plan = createSessionSwarm(W6_TOPOLOGY.nodes, { models: [W6_TOPOLOGY.model], furtherCopies: false }).state().plan;
  return {
    workload: 'w6-kills',
    label: 'W6 kills mid-generation: 32–128-step sessions, two of twelve nodes killed',
    seeds,
    sessionsPerRun: count,
    detectMs,
    prefillInputsPerStep: PREFILL_INPUTS_PER_STEP,
    topology: { msPerLayer: W6_TOPOLOGY.msPerLayer, hopMs: W6_TOPOLOGY.hopMs, pipelines: plan.pipelines.map((p) => ({ id: p.id, stages: p.stages.map((s) => `${s.nodeId} [${s.layerStart}, ${s.layerEnd})`) })) },
    strategies,
    targets: w6Targets(runs, strategies),
  };
}

const FIELDS: readonly (keyof W6Figures)[] = [
  'sessions', 'completed', 'correct', 'lost', 'lostWithCover', 'failures', 'freshLayerSteps', 'replayLayerSteps', 'rerunLayerSteps',
  'recomputeLayerSteps', 'lostLayerSteps', 'replayMs', 'worstFailureRatio', 'p50', 'p99', 'affectedP99',
];

function medianFigures(list: readonly W6Figures[]): W6Figures {
  const out: Record<string, number> = {};
  for (const f of FIELDS) out[f] = round(median(list.map((x) => x[f])), 4);
  return out as unknown as W6Figures;
}

/** W6's targets for resume, against restart on the same seeds (docs/sessions.md). */
function w6Targets(runs: ReadonlyMap<W6Strategy, readonly W6Figures[]>, strategies: SessionSimResult['strategies']): SessionSimResult['targets'] {
  const resume = runs.get('resume') ?? [];
  const restart = runs.get('restart') ?? [];
  const sum = (list: readonly W6Figures[], f: keyof W6Figures) => list.reduce((s, x) => s + x[f], 0);
  const lostWithCover = sum(resume, 'lostWithCover');
  const wrong = sum(resume, 'completed') - sum(resume, 'correct');
  const worst = Math.max(0, ...resume.map((x) => x.worstFailureRatio));
  const recompute = sum(restart, 'recomputeLayerSteps') > 0 ? sum(resume, 'recomputeLayerSteps') / sum(restart, 'recomputeLayerSteps') : 0;
  const pooledOf = (s: W6Strategy) => strategies.find((x) => x.strategy === s)?.pooledP99 ?? 0;
  const p99 = pooledOf('restart') > 0 ? pooledOf('resume') / pooledOf('restart') : 0;
  return [
    { target: 'sessions lost where a cover exists (all seeds)', value: lostWithCover, limit: 0, pass: lostWithCover === 0 },
    { target: 'completed sessions with a wrong output (all seeds)', value: wrong, limit: 0, pass: wrong === 0 },
    { target: 'worst failure: recompute ÷ restart\'s, over failed span ÷ model layers', value: round(worst, 4), limit: 1, pass: worst <= 1 },
    { target: 'recomputed layer-steps ÷ restart\'s (all seeds)', value: round(recompute, 4), limit: 0.5, pass: recompute <= 0.5 },
    { target: 'p99 session time ÷ restart\'s (every session of every seed)', value: round(p99, 4), limit: 1, pass: p99 <= 1 },
  ];
}

/**
 * W6 as a Markdown table: figures per strategy (medians), then the targets.
 * @throws {InputError} naming the path of a field that is not as `runSessionSim` returns it.
 */
export function sessionTable(result: SessionSimResult): string {
  checkSessionSimResult(result);
  const lines = [
    `W6 (${result.label}): medians over ${result.seeds.length} seed${result.seeds.length === 1 ? '' : 's'}, ${result.sessionsPerRun} sessions per run, nodes marked down ${result.detectMs} ms after they die; layer-steps = inputs × layers; replay timed as a batch (${result.prefillInputsPerStep} inputs ≈ one step).`,
    '',
    '| strategy | completed | correct | lost | lost with a cover | failures | fresh layer-steps | replay layer-steps | rerun layer-steps | recomputed | lost on dead nodes | replay ms | worst failure ratio | p50 ms | p99 ms | p99 hit ms | p99 all seeds ms |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const s of result.strategies) {
    const m = s.median;
    lines.push(`| ${s.strategy} | ${m.completed} | ${m.correct} | ${m.lost} | ${m.lostWithCover} | ${m.failures} | ${m.freshLayerSteps} | ${m.replayLayerSteps} | ${m.rerunLayerSteps} | ${m.recomputeLayerSteps} | ${m.lostLayerSteps} | ${m.replayMs} | ${m.worstFailureRatio} | ${m.p50} | ${m.p99} | ${m.affectedP99} | ${s.pooledP99} |`);
  }
  lines.push('', '| W6 target (resume) | value | limit | result |', '|---|--:|--:|---|');
  for (const t of result.targets) lines.push(`| ${t.target} | ${t.value} | ${t.limit} | ${t.pass ? 'pass' : '**FAIL**'} |`);
  return `${lines.join('\n')}\n`;
}
