/**
 * Precise mode's hit rates against the oracle's (docs/prefix-cache.md, "Precise mode") on H1, H2
 * and W7a–d. Writes nothing. Run after `npm run build:bench`:
 * `node dist-bench/bench/prefix-precise.js [seeds] [workload-prefix,...|replicas] [scale]`.
 */
import { preciseTable, replicaPolicies, runPreciseHitRates } from '../src/sim/load/precise-sim.js';

const seeds = Number(process.argv[2] ?? 3);
const only = process.argv[3] !== undefined && process.argv[3] !== 'all' ? process.argv[3].split(',') : undefined;
const scale = Number(process.argv[4] ?? 1);
const started = performance.now();
const seedList = Array.from({ length: seeds }, (_, i) => 1 + i);
if (only?.[0] === 'replicas') {
  // W7a through 1, 2 and 4 replicas, each request taken by one at random
  const policies = replicaPolicies();
  console.log(preciseTable(runPreciseHitRates(seedList, scale, ['w7a'], policies), policies));
} else console.log(preciseTable(runPreciseHitRates(seedList, scale, only)));
console.log(`\n(${((performance.now() - started) / 1000).toFixed(1)} s, ${seeds} seeds, scale ${scale}; hit rate (÷ the oracle's))`);
