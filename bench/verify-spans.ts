/**
 * Verification by redundant execution, at the issue's rates (docs/security.md, "Verification"):
 * the chaos test's topology (8 nodes, 12 layers, 3 copies, then the default 2), generations of
 * 4–8 steps as the chaos test sends them, 24 at once (routes spread by the calls in flight), on a
 * Swarm with sessions, each stage call run by an in-process stand-in of the agent (the digest model with per-session caches, the agent's `--lie-rate` rule)
 * and verified exactly as `hecate-node serve` verifies it (serve's `verifiedRunner`, `planCopies`,
 * `swarm.quarantine`). Without HTTP the 10,000 generations take seconds; the real-process path is
 * test/orchestrator/verify-span.test.ts.
 *
 * Measured: (1) for 10 seeds, one node lying on 10% of its calls (the seed picks which, so every
 * position is tried, those whose spans have no single-node copy too): the generation at which it
 * is quarantined (target ≤ 1,000 at the default rate), that nobody else is, the generations
 * answered wrong (lies no check saw) and the disagreements nobody settled (`disputed`); (2) 10,000
 * honest generations: false quarantines (target 0) and the extra compute, as extra stage calls ÷
 * stage calls (target ≤ 5%) and as extra layer-tokens ÷ layer-tokens (check calls replay the
 * session's earlier inputs). Run: `npm run build:bench && node dist-bench/bench/verify-spans.js [sample] [probation]`.
 */
import { DigestReference, runLayers, type LayerCaches } from '../src/core/digest-model.js';
import { ManualClock } from '../src/runtime/clock.js';
import type { NodeProfile } from '../src/core/types.js';
import { hashText, promptDigest } from '../src/wire/digest.js';
import { DEFAULT_VERIFY_SAMPLE, verifiedRunner, type SpanChecks } from '../src/orchestrator/verify-span.js';
import { createSessionSwarm, openSession, type SessionSwarm } from '../src/sessions/index.js';
import type { StageRunner } from '../src/sessions/session-types.js';
import { SpanStanding } from '../src/sessions/span-standing.js';

const SAMPLE = Number(process.argv[2] ?? DEFAULT_VERIFY_SAMPLE);
/** `serve --verify-probation`: every call of a node verified until this many of its checks agreed. */
const PROBATION = Number(process.argv[3] ?? 0);
const LIE_RATE = 0.1;
const LIAR_GENERATES = 1000;
const HONEST_GENERATES = 10_000;
const SEEDS = 10;
/** Copies of the model: the chaos test's 3, and the default 2 (a dispute settled by a third node re-running the span). */
const COPIES = [3, 2];
const CONCURRENCY = 24;
const SCORES = [1, 1.5, 2, 2.5, 3, 2, 1.5, 1];
/** 6 GB nodes hold the chaos test's 3 copies; 3 GB ones only the default 2 (4 stages each). */
const nodesFor = (copies: number): NodeProfile[] => SCORES.map((score, i) => ({ id: `n${i + 1}`, memoryGb: copies === 2 ? 3 : 6, score }));

interface Tally {
  /** The liar's own calls and the lies among them. */
  liarCalls: number;
  lies: number;
  calls: number;
  checkCalls: number;
  work: number;
  checkWork: number;
  /** Generations answered with a wrong output, and disagreements nobody settled. */
  wrong: number;
  disputed: number;
}

/** In-process agents: per node and session caches; `liar` flips its output on `LIE_RATE` of its calls, as the agent's `--lie-rate` does. */
function agents(liar: string | undefined, seed: number, tally: Tally): StageRunner<number> {
  const caches = new Map<string, LayerCaches>();
  return async (stage, input, context) => {
    await new Promise<void>((resolve) => setImmediate(resolve)); // a call takes a turn of the loop: generations overlap
    const key = `${stage.nodeId}/${stage.sessionId}`;
    let held = caches.get(key);
    if (held === undefined) caches.set(key, (held = new Map()));
    if (context.fresh) for (let l = stage.layerStart; l < stage.layerEnd; l++) held.delete(l);
    const cache = held;
    const work = (stage.layerEnd - stage.layerStart) * (1 + context.replay.length);
    if (stage.stageIndex < 0) (tally.checkCalls++, (tally.checkWork += work));
    else (tally.calls++, (tally.work += work));
    context.replayed(context.replay.map((x) => runLayers(x, stage.layerStart, stage.layerEnd, cache)));
    const out = runLayers(input, stage.layerStart, stage.layerEnd, cache);
    const lies = stage.nodeId === liar && hashText(`${stage.sessionId}/${context.step}/${stage.layerStart}`, seed ^ 0x5bd1e995) / 0x1_0000_0000 < LIE_RATE;
    if (stage.nodeId === liar && stage.stageIndex >= 0) (tally.liarCalls++, (tally.lies += lies ? 1 : 0));
    return lies ? (out ^ 1) >>> 0 : out;
  };
}

/** Runs up to `count` generations, `CONCURRENCY` at once, until `more` says no (it is asked before each starts); how many ran. */
async function load(swarm: SessionSwarm, runner: StageRunner<number>, checks: SpanChecks, tally: Tally, count: number, more: () => boolean): Promise<number> {
  let next = 0;
  let done = 0;
  const one = async (i: number): Promise<void> => {
    const steps = 4 + (i % 5);
    const session = openSession(swarm, { model: 'base', tokens: 8 + steps }, verifiedRunner({ swarm, runner, check: () => runner, checks }), { stageTimeoutMs: 60_000 });
    try {
      let x = promptDigest(`prompt ${i}`);
      for (let t = 0; t < steps; t++) x = await session.step(x);
      const reference = new DigestReference(12);
      let y = promptDigest(`prompt ${i}`);
      for (let t = 0; t < steps; t++) y = reference.step(y);
      if (x !== y) tally.wrong++;
    } catch {
      // A disagreement nobody settled fails the generation (Disputed): counted by its verdict.
    } finally {
      session.close();
      done++;
    }
  };
  const worker = async (): Promise<void> => {
    while (next < count && more()) await one(next++);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return done;
}

function run(liar: string | undefined, seed: number, count: number, copies: number) {
  // A clock that stands still: routing follows the declared speeds and the calls in flight alone,
  // so a seed gives the same run, byte for byte.
  const swarm = createSessionSwarm(nodesFor(copies), { models: [{ id: 'base', kind: 'base', layers: 12, pipelines: copies }] }, { seed, clock: new ManualClock() });
  const tally: Tally = { liarCalls: 0, lies: 0, calls: 0, checkCalls: 0, work: 0, checkWork: 0, wrong: 0, disputed: 0 };
  const quarantined: { nodeId: string; at: number }[] = [];
  let generated = 0;
  const checks: SpanChecks = {
    sample: SAMPLE,
    seed,
    probation: PROBATION,
    standing: new SpanStanding(),
    quarantine: (nodeId) => {
      quarantined.push({ nodeId, at: generated });
      return swarm.quarantine(nodeId);
    },
    verdict: (kind) => {
      if (kind === 'disputed') tally.disputed++;
    },
  };
  const runner = agents(liar, seed, tally);
  return (async () => {
    const started = performance.now();
    // `generated` counts generations started: a quarantine is charged to the latest started.
    const done = await load(swarm, runner, checks, tally, count, () => {
      if (liar !== undefined && quarantined.length > 0) return false;
      generated++;
      return true;
    });
    swarm.stop();
    return { done, quarantined, tally, ms: performance.now() - started };
  })();
}

const pct = (a: number, b: number) => `${((100 * a) / Math.max(b, 1)).toFixed(2)}%`;
for (const copies of COPIES) {
  console.log(`verify-spans: sample ${SAMPLE}, probation ${PROBATION}, lie rate ${LIE_RATE}, 8 nodes, ${copies} copies of 12 layers (${copies === 2 ? '3' : '6'} GB each), ${CONCURRENCY} generations at once`);
  const caught: number[] = [];
  let falseInLiarRuns = 0;
  let wrong = 0;
  let disputed = 0;
  let generations = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const liar = `n${(seed % SCORES.length) + 1}`;
    const r = await run(liar, seed, LIAR_GENERATES, copies);
    const first = r.quarantined[0];
    falseInLiarRuns += r.quarantined.filter((q) => q.nodeId !== liar).length;
    wrong += r.tally.wrong;
    disputed += r.tally.disputed;
    generations += r.done;
    if (first?.nodeId === liar) caught.push(first.at);
    console.log(`  seed ${seed}: liar ${liar}: ${first === undefined ? `not quarantined in ${r.done} generations` : `${first.nodeId} quarantined at generation ${first.at}`} (${r.tally.calls} stage calls, ${r.tally.liarCalls} of them the liar's, ${r.tally.lies} lies; ${r.tally.checkCalls} check calls; ${r.tally.wrong} wrong answers, ${r.tally.disputed} disputed)`);
  }
  const sorted = [...caught].sort((a, b) => a - b);
  console.log(`liar quarantined in ${caught.length}/${SEEDS} seeds within ${LIAR_GENERATES} generations (target ${SEEDS}/${SEEDS}); generations to quarantine: median ${sorted[Math.floor(sorted.length / 2)] ?? '-'}, max ${sorted.at(-1) ?? '-'}; honest nodes quarantined in those runs: ${falseInLiarRuns}; wrong answers ${wrong} of ${generations} generations (lies no check saw, before the quarantine); disputed ${disputed}`);
  const honest = await run(undefined, 99, HONEST_GENERATES, copies);
  console.log(`honest: ${honest.done} generations in ${(honest.ms / 1000).toFixed(1)} s: ${honest.quarantined.length} quarantined (target 0); extra compute ${pct(honest.tally.checkCalls, honest.tally.calls)} in stage calls (${honest.tally.checkCalls} ÷ ${honest.tally.calls}; target ≤ 5%), ${pct(honest.tally.checkWork, honest.tally.work)} in layer-tokens`);
}
