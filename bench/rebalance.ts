/**
 * Rebalancing after churn (docs/rebalance.md "Measured"): issue 39's measurement and its answer.
 * A seeded swarm (120 nodes of 6–24 GB and score 1–8, drawn at random) after 200 churn events
 * (a random node retired or a drawn one added, a fair coin each), on one model of 32 layers and
 * on three models (bench/churn.ts); three seeds each. For each: the plan's counted-once throughput
 * against a fresh plan on the same nodes, before and after one rebalance (`proposeMoves`), the
 * layers it moves against the layers a fresh re-plan would move, and whether a second rebalance
 * right after moves nothing. Then the decision's time on 1,000 nodes after 400 churn events.
 * Run: `npm run build:bench && node dist-bench/bench/rebalance.js` (rows on stdout as JSON).
 */
import { fileURLToPath } from 'node:url';
import { planSwarm } from '../src/index.js';
import { sharedThroughput } from '../src/core/shared-throughput.js';
import { planLayersMoved } from '../src/rebalance/plan-layers-moved.js';
import { proposeMoves } from '../src/rebalance/propose-moves.js';
import { churnedSwarm, ONE_MODEL, THREE_MODELS } from './churn.js';
import type { BenchRow } from './types.js';

/** Share of a fresh plan's counted-once throughput one rebalance must reach after the churn. */
export const FRESH_SHARE = 0.9;
/** Deciding on 1,000 nodes, median milliseconds. */
export const DECIDE_MS_1000 = 1000;

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** The rows: per swarm and seed, then the timing. */
export function rebalanceBench(log: (line: string) => void = () => undefined): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const [name, models] of [['1 model x 32 layers', ONE_MODEL], ['3 models (32 x 2 copies, 16, 16)', THREE_MODELS]] as const) {
    for (const seed of [1, 2, 3]) {
      log(`rebalance: ${name}, seed ${seed}`);
      const c = churnedSwarm(seed, models);
      const plan = c.swarm.state().plan;
      const freshPlan = planSwarm(c.profiles, { models: models.map((m) => ({ ...m })) });
      const fresh = sharedThroughput(freshPlan, c.profiles).layerRate;
      const r = proposeMoves(plan, c.profiles);
      const again = proposeMoves(r.plan, c.profiles);
      const freshMoved = planLayersMoved(plan, freshPlan);
      rows.push({
        name: `rebalance after 200 churn events / ${name} / seed ${seed}`,
        size: `${c.profiles.length} nodes (${c.retired} retired, ${c.added} added); before ${r3(r.before / fresh)} of fresh; ${r.moves.length} moves, ${r.layersMoved} layers moved vs ${freshMoved} for a fresh re-plan; second rebalance: ${again.moves.length} moves`,
        median: r3(r.after / fresh),
        unit: 'x fresh plan',
        baselineName: 'before the rebalance',
        baseline: r3(r.before / fresh),
        ratio: r3(r.layersMoved / Math.max(1, freshMoved)),
        target: `>= ${FRESH_SHARE} of a fresh plan; second rebalance moves nothing`,
        pass: r.after >= FRESH_SHARE * fresh && again.moves.length === 0,
      });
    }
  }
  log('rebalance: 1,000 nodes');
  const c = churnedSwarm(5, ONE_MODEL, 1000, 400);
  const plan = c.swarm.state().plan;
  const times: number[] = [];
  let last = proposeMoves(plan, c.profiles);
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    last = proposeMoves(plan, c.profiles);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const ms = times[2] as number;
  rows.push({
    name: 'proposeMoves, deciding',
    size: `${c.profiles.length} nodes after 400 churn events, 1 model x 32 layers; ${last.moves.length} moves in ${last.rounds} rounds, ${r3(last.before / last.bound)} -> ${r3(last.after / last.bound)} of the compute bound`,
    median: Math.round(ms),
    unit: 'ms',
    target: `<= ${DECIDE_MS_1000} ms`,
    pass: ms <= DECIDE_MS_1000,
  });
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows = rebalanceBench((line) => console.error(line));
  console.log(JSON.stringify(rows, null, 2));
}
