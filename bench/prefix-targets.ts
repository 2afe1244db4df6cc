/**
 * The prefix-routing targets (docs/prefix-cache.md, "Held-out workloads"): H1, H2 and W7a–d through
 * the frozen baselines and ours with `slots` undeclared and declared, every cell printed. 3 seeds by
 * default. Writes nothing. Run after `npm run build:bench`:
 * `node dist-bench/bench/prefix-targets.js [seeds] [workload,...] [scale]`.
 */
import { runTargets, targetsTable } from '../src/sim/load/heldout-sim.js';

const seeds = Number(process.argv[2] ?? 3);
const workloads = process.argv[3] !== undefined && process.argv[3] !== 'all' ? process.argv[3].split(',') : undefined;
const scale = Number(process.argv[4] ?? 1);
const started = performance.now();
const result = runTargets({ seeds, scale, ...(workloads !== undefined ? { workloads } : {}) });
console.log(targetsTable(result));
const missed = result.cells.filter((c) => !c.pass);
console.log(`\n${result.cells.length} cells, ${missed.length} missed (${((performance.now() - started) / 1000).toFixed(1)} s, seeds ${result.seeds.join(', ')}, scale ${scale}).`);
